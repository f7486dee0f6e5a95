import XCTest
@testable import NarniaShell

final class RcloneRemoteTests: XCTestCase {
    /// The folder of each spelling was found by `rclone lsf` (rclone 1.60.1) listing a marker
    /// file put in it, with the config of `section` below.
    func testTheFolderReachedIsRclones() {
        let config: [String: [String: String]] = [
            "loc": ["type": "local"],
            "al": ["type": "alias", "remote": "loc:/tmp/rt2/sub"],
            "al2": ["type": "alias", "remote": "al:inner"],
            "cloud": ["type": "s3"],
        ]
        let cases: [(String, String?)] = [
            ("/srv/backup", "/srv/backup"),
            ("relative/folder", "relative/folder"),
            ("backups/2024:01", "backups/2024:01"),   // a `/` before the `:`: a local path
            ("x\\y:z", "x\\y:z"),
            (":local:", "."),
            (":local:d", "d"),
            (":local,description=Bob's:/tmp/rt2/d", "/tmp/rt2/d"),   // a quote opens only at a value's start
            (":local,description='it''s':d", "d"),
            (":local,description=\"a:b\",case_insensitive:/x", "/x"),
            ("loc:/tmp/rt2/d", "/tmp/rt2/d"),
            ("loc,case_insensitive=true:d", "d"),
            ("al:", "/tmp/rt2/sub"),
            ("al:inner", "/tmp/rt2/sub/inner"),
            ("al:../inner", "/tmp/rt2/sub/inner"),   // `..` stops at the alias's root
            ("al2:", "/tmp/rt2/sub/inner"),
            (":alias,remote=/tmp/rt2/sub:inner", "/tmp/rt2/sub/inner"),
            (":alias,remote='al2:':deeper", "/tmp/rt2/sub/inner/deeper"),
            (":alias,remote=al2:deeper", "al2/deeper"),   // unquoted, the value ends at the `:`
            (".hidden:x", nil),   // a remote named `.hidden`, which is not configured
            ("cloud:bucket", nil),
            (":s3:bucket", nil),
            ("unknown:x", nil),
            (":local,description='open:x", nil),   // rclone refuses an unclosed quote
            (":/x", nil),
            ("a@b:c", nil),
            ("", nil),
        ]
        for (remote, folder) in cases {
            XCTAssertEqual(folders(remote, config)?.map(\.path), folder.map { [$0] } ?? [], remote)
        }
    }

    func testAnAliasOfItselfEnds() {
        XCTAssertNil(folders("loop:", ["loop": ["type": "alias", "remote": "loop:x"]]), "not known where it leads")
        // A union of itself, ten times over, ends in a few steps (rclone refuses it).
        let branching = "/srv/a " + Array(repeating: "un:", count: 10).joined(separator: " ")
        XCTAssertNil(folders("un:", ["un": ["type": "union", "upstreams": branching]]))
        // Review AT F1: a union of many upstreams, or a chain of remotes inside one, was taken
        // for a remote reaching no folder here once followed a few steps.
        let config = ["un": ["type": "union", "upstreams": Array(repeating: "/srv/e:ro", count: 63).joined(separator: " ") + " a1:"],
                      "a1": ["type": "alias", "remote": "a2:"], "a2": ["type": "alias", "remote": "/srv/holding"]]
        XCTAssertEqual(folders("un:", config)?.last?.path, "/srv/holding")
        let chain = Dictionary(uniqueKeysWithValues: (0..<20).map { ("c\($0)", ["type": "alias", "remote": "c\($0 + 1):"]) })
        XCTAssertNil(folders(":union,upstreams='/srv/e c0:':", chain))
    }

    /// Review AO: remotes that wrap a folder (hasher, chunker, compress, cache, crypt), and an
    /// alias whose target is the backend's default in the environment, reached the folder
    /// holding the store unseen.
    func testWrappersReachTheFolderTheyWrap() {
        let config: [String: [String: String]] = [
            "hs": ["type": "hasher", "remote": "/srv/parent"],
            "ch": ["type": "chunker", "remote": "/srv/parent"],
            "cr": ["type": "crypt", "remote": "/srv/parent/secret"],
            "bare": ["type": "alias"],
        ]
        let environment = ["RCLONE_ALIAS_REMOTE": "/srv/default"]
        func folder(_ remote: String) -> [RcloneRemote.Folder]? { folders(remote, config, environment) }
        XCTAssertEqual(folder("hs:"), [.init(path: "/srv/parent")])
        XCTAssertEqual(folder("hs:sub"), [.init(path: "/srv/parent/sub")])
        XCTAssertEqual(folder("ch:sub"), [.init(path: "/srv/parent/sub", namesKept: false)])
        XCTAssertEqual(folder(":compress,remote=/srv/parent:"), [.init(path: "/srv/parent", namesKept: false)])
        XCTAssertEqual(folder("cr:"), [.init(path: "/srv/parent/secret", namesKept: false)])
        XCTAssertEqual(folder("cr:sub/deeper"), [.init(path: "/srv/parent/secret", exact: false, namesKept: false)], "its path is encrypted")
        XCTAssertEqual(folder(":alias:x"), [.init(path: "/srv/default/x")])
        XCTAssertEqual(folder("bare:x"), [.init(path: "/srv/default/x")])
        XCTAssertEqual(folders("bare:x", config), [], "no target: rclone refuses it")
    }

    /// Review AP: a crypt that leaves folder names plain puts its path's folders there as they
    /// are; and rclone takes a setting from the connection string, else the environment for
    /// that remote, else the environment for its backend, else the config file. Checked with
    /// `rclone lsf` and `rclone copy` (1.60.1).
    func testPlainCryptFoldersAndTheOrderOfSettings() {
        let config: [String: [String: String]] = [
            "cr2": ["type": "crypt", "remote": "/srv/base", "directory_name_encryption": "false"],
            "hs": ["type": "hasher", "remote": "/srv/file"],
        ]
        func folder(_ remote: String, _ environment: [String: String] = [:]) -> [RcloneRemote.Folder]? { folders(remote, config, environment) }
        XCTAssertEqual(folder("cr2:v/inside"), [.init(path: "/srv/base/v/inside", namesKept: false)])
        XCTAssertEqual(folder(":crypt,remote=/srv/base,filename_encryption=off:d1/d2"), [.init(path: "/srv/base/d1/d2", namesKept: false)])
        XCTAssertEqual(folder("cr2:v", ["RCLONE_CRYPT_DIRECTORY_NAME_ENCRYPTION": "true"]), [.init(path: "/srv/base", exact: false, namesKept: false)])
        XCTAssertEqual(folder("hs:x"), [.init(path: "/srv/file/x")])
        XCTAssertEqual(folder("hs:x", ["RCLONE_HASHER_REMOTE": "/srv/backend"]), [.init(path: "/srv/backend/x")])
        XCTAssertEqual(folder("hs:x", ["RCLONE_HASHER_REMOTE": "/srv/backend", "RCLONE_CONFIG_HS_REMOTE": "/srv/named"]), [.init(path: "/srv/named/x")])
        XCTAssertEqual(folder("hs,remote=/srv/string:x", ["RCLONE_CONFIG_HS_REMOTE": "/srv/named"]), [.init(path: "/srv/string/x")])
        XCTAssertEqual(folder("my-r:/d", ["RCLONE_CONFIG_MY-R_TYPE": "local"]), [.init(path: "/d")], "an environment-only remote, its name as it is")
        XCTAssertEqual(folder("my-r:/d", ["RCLONE_CONFIG_MY_R_TYPE": "local"]), [])
    }

    /// A union reaches each of its upstreams, joined with its path (a tag after an upstream's
    /// path dropped); a combine the upstream its path's first folder names, or all of them
    /// below its root. Checked with `rclone lsf` and marker files (1.60.1).
    func testUnionAndCombineReachTheirUpstreams() {
        let config: [String: [String: String]] = [
            "un": ["type": "union", "upstreams": "/srv/a:ro \"/srv/d e\" loc:/srv/b:nc"],
            "old": ["type": "union", "remotes": "/srv/a /srv/b"],
            "loc": ["type": "local"],
            "cb": ["type": "combine", "upstreams": "x=/srv/a \"y=loc:/srv/b c\" z=s3:bucket"],
            "cloud": ["type": "s3"],
        ]
        let some = RcloneRemote.Folder(path: "", receivesAll: false)
        func at(_ path: String, _ reach: RcloneRemote.Folder = .init(path: "")) -> RcloneRemote.Folder {
            var folder = reach
            folder.path = path
            return folder
        }
        var readOnly = some
        readOnly.exact = false
        XCTAssertEqual(folders("un:", config), [at("/srv/a", readOnly), at("/srv/d e", some), at("/srv/b", some)], ":ro receives nothing")
        XCTAssertEqual(folders("un:v/../w", config), [at("/srv/a/w", readOnly), at("/srv/d e/w", some), at("/srv/b/w", some)])
        // Review AT F3: `:writeback`, a tag from rclone 1.63 on, is part of a folder's name before.
        XCTAssertEqual(folders(":union,upstreams='/srv/a /srv/w:writeback':", config), [at("/srv/a", some), at("/srv/w:writeback", some), at("/srv/w", some)])
        // Review AT F2: rclone reads the first line of the list.
        XCTAssertEqual(folders("nl:", ["nl": ["type": "union", "upstreams": "\n/srv/a /srv/b\n/srv/c"]]), [at("/srv/a", some), at("/srv/b", some)])
        XCTAssertEqual(folders("old:v", config), [at("/srv/a/v", some), at("/srv/b/v", some)], "the older setting")
        XCTAssertEqual(folders(":union,upstreams='cloud: /srv/a':v", config), [at("/srv/a/v", some)], "the folders among its upstreams")
        XCTAssertEqual(folders(":union,upstreams=/srv/a:", config), [], "rclone refuses a union of one")
        XCTAssertEqual(folders(":union,upstreams='/srv/a x\"y':", config), [], "nor a quote inside a word")
        XCTAssertEqual(folders("cb:x", config), [at("/srv/a")])
        XCTAssertEqual(folders("cb:y/w", config), [at("/srv/b c/w")])
        XCTAssertEqual(folders("cb:z/v", config), [])
        XCTAssertEqual(folders("cb:nothing", config), [])
        // Review AT F4: at its root, an upstream named like a shard folder receives a shard's files.
        XCTAssertEqual(folders("cb:", config), [at("/srv/a", some), at("/srv/b c", some)])
    }

    func testSpaceSeparatedListsAreReadAsRcloneReadsThem() {
        XCTAssertEqual(RcloneRemote.spaceSeparatedList("a  b "), ["a", "b"])
        XCTAssertEqual(RcloneRemote.spaceSeparatedList("\r\n\na b\r\nc"), ["a", "b"])
        XCTAssertEqual(RcloneRemote.spaceSeparatedList("\"a\nb\" c\nd"), ["a\nb", "c"])
        XCTAssertEqual(RcloneRemote.spaceSeparatedList("\"a b\" \"say \"\"hi\"\"\""), ["a b", "say \"hi\""])
        XCTAssertNil(RcloneRemote.spaceSeparatedList("a\"b"))
        XCTAssertNil(RcloneRemote.spaceSeparatedList("\"a"))
    }

    func testOptionsAndPathAreSplitAsRcloneSplitsThem() {
        let parsed = RcloneRemote("name,a=1,b='x,y:z',c:path:with:colons")
        XCTAssertEqual(parsed?.name, "name")
        XCTAssertEqual(parsed?.options, ["a": "1", "b": "x,y:z", "c": "true"])
        XCTAssertEqual(parsed?.path, "path:with:colons")
        XCTAssertEqual(parsed?.configString, "name,a=1,b='x,y:z',c")
    }

    /// Review AL F4: a folder in an rclone mount is followed to the remote behind it. The line
    /// is what `rclone mount al:inner /tmp/rmnt` (al an alias of loc:/tmp/rt2/sub) put in
    /// `/proc/self/mountinfo`.
    func testAFolderInAnRcloneMountIsTheRemoteBehindIt() {
        let mountinfo = """
        26 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
        48 27 0:43 / /tmp/rmnt rw,nosuid,nodev,relatime - fuse.rclone loc:/tmp/rt2/sub/inner rw,user_id=0,group_id=0
        49 27 0:44 / /tmp/with\\040space rw,nosuid,nodev,relatime shared:7 - fuse.rclone /srv/a\\040b rw,user_id=0,group_id=0
        50 27 0:45 / /tmp/view rw,relatime - fuse.bindfs /srv/x rw
        """
        let mounts = RcloneMounts.parse(mountinfo)
        XCTAssertEqual(mounts, [.init(point: "/tmp/rmnt", source: "loc:/tmp/rt2/sub/inner"), .init(point: "/tmp/with space", source: "/srv/a b")])
        XCTAssertEqual(RcloneMounts.remote(reaching: "/tmp/rmnt", mounts: mounts), "loc:/tmp/rt2/sub/inner")
        XCTAssertEqual(RcloneMounts.remote(reaching: "/tmp/rmnt/vault/../x", mounts: mounts), "loc:/tmp/rt2/sub/inner/x")
        XCTAssertEqual(RcloneMounts.remote(reaching: "/tmp/with space/v", mounts: mounts), "/srv/a b/v")
        XCTAssertNil(RcloneMounts.remote(reaching: "/tmp/rmntx", mounts: mounts))
        XCTAssertNil(RcloneMounts.remote(reaching: "/tmp/view/v", mounts: mounts), "not an rclone mount")
        // Review BH-8: the path below a mount point was cut by Characters counted in bytes.
        let wide = [RcloneMounts.Mount(point: "/tmp/日本", source: "loc:/srv/src"), .init(point: "/tmp/a", source: "loc:/srv/b")]
        XCTAssertEqual(RcloneMounts.remote(reaching: "/tmp/日本/vault/x", mounts: wide), "loc:/srv/src/vault/x")
        XCTAssertEqual(RcloneMounts.remote(reaching: "/tmp/a/\u{301}x/..", mounts: wide), "loc:/srv/b")
    }
}

/// The folders `remote` reaches with rclone's config `config` and `environment`.
private func folders(_ remote: String, _ config: [String: [String: String]], _ environment: [String: String] = [:]) -> [RcloneRemote.Folder]? {
    RcloneRemote.localFolders(of: remote, section: { config[$0] }, environment: environment)
}
