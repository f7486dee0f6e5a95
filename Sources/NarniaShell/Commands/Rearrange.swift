import NarniaLanguage
import NarniaStore

/// `mkdir`, `rm`, `rmdir`, `mv`, `cp`: changing the tree.
enum Rearrange {
    /// Makes each folder named; an operand that cannot be made is reported and the others go
    /// on, as coreutils' `mkdir` does (a failure of the store itself stops the command).
    static func mkdir(_ s: Session, _ a: ParsedArguments) throws {
        guard !a.operands.isEmpty else { throw CommandFailure("missing folder name", hint: CommandTable.usage(of: "mkdir")) }
        let failed = try s.forEachOperand(a.operands, of: a.command) { try makeFolder(s, $0, parents: a.has("-p")) }
        if failed { throw Reported() }
    }

    /// One operand of `mkdir`: the folders that exist, then the rest made in one journal record.
    private static func makeFolder(_ s: Session, _ typed: Word, parents: Bool) throws {
        guard !typed.text.isEmpty else { throw CommandFailure("'': \(NameError.empty.description)") }
        let word = try HiddenNames.resolving(typed, in: s)   // `mkdir -p #1/new` (review CC-5)
        if !parents { try s.checkClimbs(PathPattern(word)) }
        let path = VaultPath.resolve(ItemName.nfc(word.text), relativeTo: s.cwd)
        for name in path.components { _ = try validName(name) }
        guard !path.isRoot else {
            if parents { return }
            throw CommandFailure("/: already exists")
        }
        var current = Identifier.root
        var depth = 0
        for name in path.components {
            guard let existing = s.vault.child(named: name, in: current) else { break }
            guard existing.isFolder else {
                let there = VaultPath(components: Array(path.components[...depth]))
                throw CommandFailure("\(s.inMessage(there)): \(depth == path.components.count - 1 ? "already exists" : "not a folder")")
            }
            current = existing.id
            depth += 1
        }
        if depth == path.components.count {
            if !parents { throw CommandFailure("\(s.inMessage(path)): already exists") }
            return
        }
        guard depth == path.components.count - 1 || parents else {
            throw CommandFailure("\(s.inMessage(path.parent)): no such folder", hint: "use mkdir -p to create the parents too")
        }
        try s.vault.makeFolders(Array(path.components[depth...]), in: current)
    }

    static func rm(_ s: Session, _ a: ParsedArguments) throws {
        let force = a.has("-f"), recursive = a.has("-r")
        guard !a.operands.isEmpty || force else { throw CommandFailure("missing path", hint: CommandTable.usage(of: "rm")) }
        var targets: [(VaultPath, Identifier)] = []
        try doingAllOrNone({ a.operands.count > 1 || !targets.isEmpty }, "removed") {
            for word in a.operands {
                try refuseDotOrDotDot(word)
                let matches: [(VaultPath, Identifier)]
                do { matches = try s.existing(word) } catch { if force { continue }; throw error }
                for (path, id) in matches {
                    if path.isRoot { throw CommandFailure("refusing to remove the root folder") }
                    if s.vault.isFolder(id) && !recursive {
                        throw CommandFailure("\(s.inMessage(path)): is a folder", hint: "use rm -r to remove a folder and everything in it")
                    }
                    targets.append((path, id))
                }
            }
        }
        if a.has("-i") {
            guard s.interactive, let ask = Session.askYesNo else {
                throw CommandFailure("-i asks only in the interactive shell", hint: "leave out -i in -c and -b runs")
            }
            // Every question comes before any removal; Ctrl-C (or end of input) at one cancels
            // the command, earlier yes answers included (review BG-3: it counted as no).
            // Each item is asked about once, however many operands name it, and what lies in a
            // folder answered yes goes with it, unasked (reviews EV-2, EW-1: asked again, a no
            // went unheeded).
            var asked = Set<Identifier>(), removedWhole = Set<Identifier>()
            targets = try targets.filter { path, id in
                guard asked.insert(id).inserted, !s.vault.hasAncestor(id, in: removedWhole) else { return false }
                // Under hide-names an item a command before on the line made or moved had no
                // number in the listing the user answers from (review CY-2: each was asked
                // about as "(made or moved by this line)", which told them apart no more).
                guard let shown = s.shownAsTyped(path, on: s.out) else {
                    // Not named by its numbers now, which the listing gives other items (CZ-3).
                    throw CommandFailure("an item a command before it on this line made or moved had no number when the line was typed; nothing was removed",
                                         hint: "list the folder, then rm -i on a line of its own")
                }
                let what = s.vault.isFolder(id) ? "the folder \(shown) and everything in it" : shown
                guard let yes = ask("remove \(what)? [y/N] ") else { throw Cancelled() }
                if yes && s.vault.isFolder(id) { removedWhole.insert(id) }
                return yes
            }
        }
        try s.vault.remove(targets.map(\.1))
    }

    /// As GNU `rm` and `mv`: `rm`, `rmdir`, `mv` and `cp` refuse a path whose last part is `.`
    /// or `..`, so that `rm -r ..` never removes the folder above without a word.
    private static func refuseDotOrDotDot(_ word: Word, verb: String = "remove") throws {
        // By scalar: `x\u{600}/..` is one Character-split part, and removed the folder it
        // named without this refusal (review BI: a Prepend character joins the `/` after it).
        let last = word.text.lastPathComponent
        if last == "." || last == ".." {
            throw CommandFailure("refusing to \(verb) '.' or '..': skipping '\(word.text)'")
        }
    }

    static func rmdir(_ s: Session, _ a: ParsedArguments) throws {
        guard !a.operands.isEmpty else { throw CommandFailure("missing folder", hint: CommandTable.usage(of: "rmdir")) }
        var targets: [Identifier] = []
        try doingAllOrNone({ a.operands.count > 1 || !targets.isEmpty }, "removed") {
            for word in a.operands {
                try refuseDotOrDotDot(word)
                for (path, id) in try s.existing(word) {
                    if path.isRoot { throw CommandFailure("refusing to remove the root folder") }
                    guard s.vault.isFolder(id) else { throw CommandFailure("\(s.inMessage(path)): not a folder") }
                    guard s.vault.children(of: id).isEmpty else { throw CommandFailure("\(s.inMessage(path)): folder is not empty") }
                    targets.append(id)
                }
            }
        }
        try s.vault.remove(targets)
    }

    /// Where each source goes for `mv`/`cp`: (source, destination folder, new name, replaced item).
    private typealias Plan = (source: Identifier, sourcePath: VaultPath, folder: Identifier, name: String, replacing: Identifier?)

    /// `named` is set to the number of sources the operands name.
    private static func plan(_ s: Session, _ a: ParsedArguments, verb: String, sources named: inout Int) throws -> [Plan] {
        guard a.operands.count >= 2 else { throw CommandFailure("missing destination", hint: CommandTable.usage(of: verb)) }
        let force = a.has("-f")
        var sources: [(VaultPath, Identifier)] = []
        for word in a.operands.dropLast() {
            try refuseDotOrDotDot(word, verb: verb == "mv" ? "move" : "copy")
            sources += try s.existing(word)
            named = sources.count
        }
        let destWord = a.operands.last!
        guard !destWord.text.isEmpty else { throw CommandFailure("'': \(NameError.empty.description)") }
        let destPaths = try s.expand(destWord)
        guard destPaths.count == 1 else { throw CommandFailure("\(destWord.text): names more than one item") }
        let dest = destPaths[0]
        var plans: [Plan] = []
        let destID = s.resolve(dest)
        let intoFolder = destID.map { s.vault.isFolder($0) } ?? false
        guard intoFolder || sources.count == 1 else {
            throw s.noSuchFolder(dest)
        }
        // As coreutils: `mv -f a b/` with no folder `b` never renames a file to `b`, nor
        // replaces a file `b` (review AE); a folder may still take the name, as there.
        // By scalar: `b\u{600}/` ends in a `/` that a Prepend character joins in one Character,
        // and `mv -f a.txt 'b\u{600}/'` replaced a file `b\u{600}` (review BI-1).
        let wantsFolder = destWord.text.endsWithSlash || destWord.text.unicodeScalars.reversed().starts(with: [".", "/"])
        if wantsFolder && !intoFolder, let (_, id) = sources.first, !s.vault.isFolder(id) {
            throw s.noSuchFolder(dest)
        }
        // Two sources bound for one name (`mv a/x b/x dest`): the second would meet the first
        // half way through (review AE); refused, as export does, before anything moves.
        var bound: [Identifier: [String: VaultPath]] = [:]
        var seen = Set<Identifier>()
        // A source inside another (`mv d d/x dest`) was taken out of it again once it had
        // moved (review BG-5); refused, as moving it twice can mean nothing.
        if verb == "mv" {
            let folders = Dictionary(sources.filter { s.vault.isFolder($0.1) }.map { ($0.1, $0.0) }, uniquingKeysWith: { a, _ in a })
            for (path, id) in sources {
                var above = s.vault.item(id)?.parent
                while let folder = above, folder != .root {
                    if let outer = folders[folder] {
                        throw CommandFailure("\(s.inMessage(path)): inside \(s.inMessage(outer)), which moves too; nothing was moved")
                    }
                    above = s.vault.item(folder)?.parent
                }
            }
        }
        for (path, id) in sources where seen.insert(id).inserted {
            if path.isRoot { throw CommandFailure("refusing to \(verb == "mv" ? "move" : "copy") the root folder") }
            // Before -n looks at the target (review CW-4: `cp -n` of a folder there already
            // copied nothing, without a word, as coreutils does not).
            if verb == "cp" && s.vault.isFolder(id) && !a.has("-r") && !a.has("-a") {
                throw CommandFailure("\(s.inMessage(path)): is a folder", hint: "use cp -r to copy a folder")
            }
            let folder: Identifier, name: String
            if intoFolder {
                folder = destID!
                name = path.lastComponent!
            } else {
                guard let parent = s.resolve(dest.parent), s.vault.isFolder(parent) else {
                    // "Not a folder" of a file on the way, as every other command says it
                    // (reviews EP-2, EQ-2).
                    throw s.noSuchFolder(dest.parent)
                }
                folder = parent
                name = try validName(dest.lastComponent ?? "")
            }
            if s.vault.isFolder(id) && s.vault.isSelfOrAncestor(id, of: folder) {
                throw CommandFailure("cannot \(verb == "mv" ? "move" : "copy") \(s.inMessage(path)) into itself")
            }
            if let other = bound[folder]?[name] {
                throw CommandFailure("\(s.inMessage(dest.appending(name))): more than one source would go there (\(s.inMessage(other)) and \(s.inMessage(path)))")
            }
            bound[folder, default: [:]][name] = path
            var replacing: Identifier?
            if let existing = s.vault.child(named: name, in: folder), existing.id == id {
                throw CommandFailure("\(s.inMessage(path)): source and destination are the same item")
            }
            if let existing = s.vault.child(named: name, in: folder) {
                let target = s.vaultPath(of: existing.id)
                if a.has("-n") && verb == "cp" && (a.has("-r") || a.has("-a")) {
                    try planMerge(s, from: (id, path), onto: (existing, target), bound: &bound, into: &plans)
                    continue
                }
                if a.has("-n") { continue }   // never replace; the source stays
                if existing.isFolder { throw CommandFailure("\(s.inMessage(target)): a folder already exists there") }
                guard force else { throw CommandFailure("\(s.inMessage(target)): already exists", hint: "use \(verb) -f to replace it") }
                if s.vault.isFolder(id) { throw CommandFailure("\(s.inMessage(target)): cannot replace a file with a folder") }
                replacing = existing.id
            }
            plans.append((id, path, folder, name, replacing))
        }
        return plans
    }

    /// `cp -rn` of `source` onto an item of its name: as coreutils, a folder onto a folder
    /// gets what that folder lacks copied into it, folder by folder, and keeps what it has
    /// (review CV-3: the source was skipped whole, without a word, so a nightly "copy what is
    /// new" copied nothing after the first night); a file onto a file or a folder is not
    /// copied; a folder onto a file is an error. A name another source's copy takes first
    /// counts as there.
    private static func planMerge(_ s: Session, from source: (id: Identifier, path: VaultPath), onto target: (item: Item, path: VaultPath),
                                  bound: inout [Identifier: [String: VaultPath]], into plans: inout [Plan]) throws {
        switch (s.vault.isFolder(source.id), target.item.isFolder) {
        case (false, _): return
        case (true, false): throw CommandFailure("\(s.inMessage(target.path)): cannot replace a file with a folder")
        case (true, true): break
        }
        for child in s.vault.children(of: source.id).sorted(by: { utf8Order($0.name, $1.name) }) {
            let childPath = source.path.appending(child.name)
            if let there = s.vault.child(named: child.name, in: target.item.id) {
                try planMerge(s, from: (child.id, childPath), onto: (there, target.path.appending(child.name)), bound: &bound, into: &plans)
            } else if bound[target.item.id]?[child.name] == nil {
                bound[target.item.id, default: [:]][child.name] = childPath
                plans.append((child.id, childPath, target.item.id, child.name, nil))
            }
        }
    }

    private static func validName(_ name: String) throws -> String {
        do { return try ItemName.validated(name) } catch let e as NameError { throw CommandFailure("\(name): \(e.description)") }
    }

    /// Runs the checks of `rm`, `rmdir`, `mv` or `cp`, which do all their operands or none,
    /// as `git rm` and `git mv` do: with several, a failure says that nothing was `done`
    /// (review CN-2: "no such file or folder" of one read, as from coreutils, as if the others
    /// were done, and a script's `rm -r` of the folder they had not left followed).
    /// `several`, asked once a check failed, says whether more than one item was named: by
    /// several operands, or by a pattern matching several (review EC-4: `mv -f */f.txt z`
    /// left the sentence out).
    private static func doingAllOrNone<T>(_ several: () -> Bool, _ done: String, _ checks: () throws -> T) throws -> T {
        do {
            return try checks()
        } catch let failure as CommandFailure where several() && !failure.message.hasSuffix("; nothing was \(done)") {
            throw CommandFailure(failure.message + "; nothing was \(done)", hint: failure.hint)
        }
    }

    static func mv(_ s: Session, _ a: ParsedArguments) throws {
        var sources = 0
        let plans = try doingAllOrNone({ sources > 1 || a.operands.count > 2 }, "moved") { try plan(s, a, verb: "mv", sources: &sources) }
        // A source moved is no longer where it was named: the same `mv` would refuse it
        // (review CO-4).
        try carryOut(plans, s, "mv", "moved", rest: "the rest are where they were") { p in
            try s.vault.move(p.source, to: p.folder, name: p.name, replacing: p.replacing)
        }
    }

    /// Moves or copies the sources one after another. When Ctrl-C stops it part way, says how
    /// many went, and how to finish (review CN-3: "interrupted" alone, and running the command
    /// again met the first that went as "already exists").
    /// `rest` says what became of the others.
    private static func carryOut(_ plans: [Plan], _ s: Session, _ verb: String, _ done: String, rest: String,
                                 _ each: (Plan) throws -> Void) throws {
        for (index, p) in plans.enumerated() {
            do {
                if index > 0 && Session.interruptRequested != 0 { throw Cancelled() }
                try each(p)
            } catch is Cancelled where index > 0 {
                s.note(verb, "\(done) \(index) of \(plans.count) before the interrupt; \(rest)")
                throw Cancelled()
            }
        }
    }

    static func cp(_ s: Session, _ a: ParsedArguments) throws {
        var sources = 0
        let plans = try doingAllOrNone({ sources > 1 || a.operands.count > 2 }, "copied") { try plan(s, a, verb: "cp", sources: &sources) }
        // Run again, the same `cp -f` copies what it copied anew, and the rest; otherwise -n
        // skips what was copied (review CW-4: a `cp -r` was told to run `cp -n`, which skipped
        // its folders whole; CY-1: a `cp -f`, whose targets were all there, skipped them all).
        let again = a.has("-f") ? "the same command" : (a.has("-r") || a.has("-a") ? "cp -rn" : "cp -n") + " with the same operands"
        try carryOut(plans, s, "cp", "copied", rest: "the rest were not: \(again) does the rest") { p in
            try s.vault.copy(p.source, to: p.folder, name: p.name, replacing: p.replacing, observer: s.observer(progress: nil))
        }
    }
}
