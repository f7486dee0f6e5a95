import XCTest
@testable import NarniaLanguage

final class TreePathTests: XCTestCase {
    private let cwd = TreePath(components: ["photos", "2024"])

    private func resolve(_ text: String) -> String {
        TreePath.resolve(text, relativeTo: cwd).description
    }

    func testAbsolutePaths() {
        XCTAssertEqual(resolve("/"), "/")
        XCTAssertEqual(resolve("/a/b"), "/a/b")
        XCTAssertEqual(resolve("//a///b//"), "/a/b")
        XCTAssertEqual(resolve("/a/b/"), "/a/b")
    }

    func testRelativePaths() {
        XCTAssertEqual(resolve("x"), "/photos/2024/x")
        XCTAssertEqual(resolve("x/y/"), "/photos/2024/x/y")
        XCTAssertEqual(resolve(""), "/photos/2024")
        XCTAssertEqual(resolve("."), "/photos/2024")
        XCTAssertEqual(resolve("./x/./y"), "/photos/2024/x/y")
    }

    func testDotDot() {
        XCTAssertEqual(resolve(".."), "/photos")
        XCTAssertEqual(resolve("../.."), "/")
        XCTAssertEqual(resolve("../../../.."), "/", "`..` at the root stays at the root")
        XCTAssertEqual(resolve("../2023/../2025"), "/photos/2025")
        XCTAssertEqual(resolve("/../a"), "/a")
        XCTAssertEqual(resolve("a/../../b"), "/photos/b")
        XCTAssertEqual(resolve("..."), "/photos/2024/...", "`...` is an ordinary name")
    }

    func testHostileNamesStayWhole() {
        XCTAssertEqual(TreePath.resolve("/-rf/a b/'q'/*", relativeTo: .root).components, ["-rf", "a b", "'q'", "*"])
        let long = String(repeating: "😀", count: 63) + "abc"   // 255 bytes
        XCTAssertEqual(TreePath.resolve("/x/" + long, relativeTo: .root).lastComponent, long)
    }

    func testDescription() {
        XCTAssertEqual(TreePath.root.description, "/")
        XCTAssertEqual(TreePath(components: ["a"]).description, "/a")
        XCTAssertEqual(TreePath(components: ["a", "b c"]).description, "/a/b c")
    }

    func testParentAndLastComponent() {
        XCTAssertEqual(cwd.parent.description, "/photos")
        XCTAssertEqual(cwd.parent.parent, .root)
        XCTAssertEqual(TreePath.root.parent, .root)
        XCTAssertEqual(cwd.lastComponent, "2024")
        XCTAssertNil(TreePath.root.lastComponent)
        XCTAssertTrue(TreePath.root.isRoot)
        XCTAssertFalse(cwd.isRoot)
    }

    func testAppending() {
        XCTAssertEqual(TreePath.root.appending("a").description, "/a")
        XCTAssertEqual(cwd.appending("x").description, "/photos/2024/x")
        XCTAssertEqual(cwd.appending(contentsOf: ["x", "y"]).description, "/photos/2024/x/y")
    }

    func testIsAncestor() {
        let a = TreePath(components: ["a"])
        let ab = TreePath(components: ["a", "b"])
        let abc = TreePath(components: ["a", "b", "c"])
        let ax = TreePath(components: ["ax"])
        XCTAssertTrue(a.isAncestor(of: ab))
        XCTAssertTrue(a.isAncestor(of: abc))
        XCTAssertTrue(TreePath.root.isAncestor(of: a))
        XCTAssertFalse(a.isAncestor(of: a), "not its own ancestor")
        XCTAssertFalse(ab.isAncestor(of: a))
        XCTAssertFalse(a.isAncestor(of: ax), "a name prefix is not an ancestor")
        XCTAssertFalse(TreePath.root.isAncestor(of: .root))
        XCTAssertTrue(a.isSelfOrAncestor(of: a))
        XCTAssertTrue(a.isSelfOrAncestor(of: abc))
    }

    func testNFCAndNFDSpellingsAreEqual() {
        let nfc = TreePath(components: ["\u{e9}t\u{e9}"])
        let nfd = TreePath(components: ["e\u{301}te\u{301}"])
        XCTAssertEqual(nfc, nfd)
        XCTAssertEqual(Set([nfc, nfd]).count, 1)
        XCTAssertTrue(nfc.isAncestor(of: nfd.appending("x")))
    }

    func testUTF8Order() {
        let names = ["b", "B", "é", "a", "Z", "日", "e"]
        XCTAssertEqual(names.sorted(by: utf8Order), ["B", "Z", "a", "b", "e", "é", "日"])
    }

    // MARK: - Path patterns

    private func pathPattern(_ typed: String) throws -> PathPattern {
        PathPattern(try XCTUnwrap(try tokenize("x " + typed).first?[1]))
    }

    func testPatternComponents() throws {
        let p = try pathPattern(#"/photos/*/a?.jpg"#)
        XCTAssertTrue(p.isAbsolute)
        XCTAssertTrue(p.hasWildcards)
        XCTAssertFalse(p.hasTrailingSlash)
        XCTAssertEqual(p.components.count, 3)
        XCTAssertEqual(p.components[0], .name("photos"))
        guard case .glob(let star) = p.components[1], case .glob(let a) = p.components[2] else {
            return XCTFail("expected globs, got \(p.components)")
        }
        XCTAssertTrue(star.matches("2024"))
        XCTAssertTrue(a.matches("ab.jpg"))
    }

    func testPatternDropsDotsAndEmptyPieces() throws {
        let p = try pathPattern("a//./b/../c/")
        XCTAssertFalse(p.isAbsolute)
        XCTAssertTrue(p.hasTrailingSlash)
        XCTAssertEqual(p.components, [.name("a"), .name("b"), .parent, .name("c")])
        XCTAssertFalse(p.hasWildcards)
    }

    func testQuotedWildcardsInPatternAreNames() throws {
        let p = try pathPattern(#"'*'/\?/"[x]""#)
        XCTAssertEqual(p.components, [.name("*"), .name("?"), .name("[x]")])
        XCTAssertFalse(p.hasWildcards)
    }

    /// A small vault: folders map to their children; a name ending in `/` is a folder.
    private let tree: [TreePath: [String]] = [
        .root: ["photos", "docs", ".secret", "a b"],
        TreePath(components: ["photos"]): ["2023", "2024", "readme.txt"],
        TreePath(components: ["photos", "2023"]): ["a1.jpg", "b.jpg"],
        TreePath(components: ["photos", "2024"]): ["a2.jpg", "a10.jpg", ".a3.jpg"],
        TreePath(components: ["docs"]): [],
        TreePath(components: [".secret"]): ["x"],
        TreePath(components: ["a b"]): [],
    ]

    private func expand(_ typed: String, cwd: TreePath = .root) throws -> [String] {
        try pathPattern(typed).expand(relativeTo: cwd) { tree[$0] }.map(\.description)
    }

    func testExpandWithoutWildcardsDoesNotCheckExistence() throws {
        XCTAssertEqual(try expand("/nothing/here"), ["/nothing/here"])
        XCTAssertEqual(try expand("../x", cwd: TreePath(components: ["photos"])), ["/x"])
    }

    func testExpandComponentByComponent() throws {
        XCTAssertEqual(try expand("/photos/*/a?.jpg"), ["/photos/2023/a1.jpg", "/photos/2024/a2.jpg"])
        XCTAssertEqual(try expand("/photos/*/a*.jpg"),
                       ["/photos/2023/a1.jpg", "/photos/2024/a10.jpg", "/photos/2024/a2.jpg"])
        XCTAssertEqual(try expand("/photos/2024/.*"), ["/photos/2024/.a3.jpg"])
    }

    func testExpandRelativeAndWithDotDot() throws {
        let photos = TreePath(components: ["photos"])
        XCTAssertEqual(try expand("20*", cwd: photos), ["/photos/2023", "/photos/2024"])
        XCTAssertEqual(try expand("../photos/2023/*", cwd: photos), ["/photos/2023/a1.jpg", "/photos/2023/b.jpg"])
        XCTAssertEqual(try expand("2*/..", cwd: photos), ["/photos"], "duplicates are merged")
    }

    func testExpandSkipsHiddenAndNonFolders() throws {
        XCTAssertEqual(try expand("/*"), ["/a b", "/docs", "/photos"])
        XCTAssertEqual(try expand("/*/x"), [], "hidden folders are not searched by *")
        XCTAssertEqual(try expand("/photos/*/"), ["/photos/2023", "/photos/2024"], "a trailing slash keeps folders")
        XCTAssertEqual(try expand("/photos/readme.txt/*"), [])
    }

    func testExpandLiteralAfterGlobMustExist() throws {
        XCTAssertEqual(try expand("/photos/*/b.jpg"), ["/photos/2023/b.jpg"])
        XCTAssertEqual(try expand("/nope*/x"), [])
    }

    func testExpandPropagatesErrors() throws {
        struct Boom: Error {}
        let p = try pathPattern("/*")
        XCTAssertThrowsError(try p.expand(relativeTo: .root) { _ in throw Boom() })
    }
}
