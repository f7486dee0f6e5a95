// swift-tools-version:6.0
// Narnia: an encrypted file vault behind a wardrobe. See README.md, "Architecture".
import PackageDescription

let package = Package(
    name: "Narnia",
    products: [
        .executable(name: "narnia", targets: ["narnia"]),
        .executable(name: "narnia-bench", targets: ["narnia-bench"]),
    ],
    targets: [
        // C libraries, wrapped as they are (system library targets) or through a small shim.
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CMagic", pkgConfig: "libmagic", providers: [.apt(["libmagic-dev"])]),
        .target(name: "CEditLine", linkerSettings: [.linkedLibrary("edit")]),
        .target(name: "CNarniaSystem"),

        // Swift layers, lowest first. A layer never imports one above it.
        // The whole program's system calls: typed open options, one retry on EINTR, errors
        // that name the call and the path, and a seam where tests make a call fail.
        .target(name: "NarniaSystem", dependencies: ["CNarniaSystem"]),
        .target(name: "NarniaCrypto", dependencies: ["CSodium"]),
        // Kinds of items (the vocabulary the store records) and libmagic, which decides them.
        .target(name: "NarniaKinds", dependencies: ["CMagic"]),
        .target(name: "NarniaStore", dependencies: ["NarniaSystem", "NarniaCrypto", "NarniaKinds"]),
        // The command language both shells speak: words, quoting, globs, completion, columns,
        // the escaping of names on screen, command specs and their help. Knows no vault.
        .target(name: "NarniaLanguage"),
        .target(name: "NarniaShell", dependencies: ["NarniaSystem", "NarniaStore", "NarniaKinds", "NarniaCrypto", "NarniaLanguage"]),
        // The cover: the Wardrobe, a closet organiser that knows nothing of the vault. It may
        // depend on the language alone (`make test` builds with
        // --explicit-target-dependency-import-check error, so an import of the vault fails).
        .target(name: "NarniaCover", dependencies: ["NarniaLanguage"]),
        .executableTarget(name: "narnia", dependencies: ["NarniaSystem", "NarniaLanguage", "NarniaShell", "NarniaStore", "NarniaCrypto", "NarniaCover", "CEditLine"]),
        // Benchmarks (make bench): calls the library in process; see bench/run.sh.
        .executableTarget(name: "narnia-bench", dependencies: ["NarniaSystem", "NarniaLanguage", "NarniaStore", "NarniaShell", "NarniaCrypto", "NarniaKinds"]),

        .testTarget(name: "NarniaSystemTests", dependencies: ["NarniaSystem"]),
        .testTarget(name: "NarniaCryptoTests", dependencies: ["NarniaCrypto"]),
        .testTarget(name: "NarniaStoreTests", dependencies: ["NarniaSystem", "NarniaKinds", "NarniaStore", "NarniaCrypto"], resources: [.copy("Vectors")]),
        .testTarget(name: "NarniaKindsTests", dependencies: ["NarniaKinds"]),
        .testTarget(name: "NarniaLanguageTests", dependencies: ["NarniaLanguage"]),
        .testTarget(name: "NarniaShellTests", dependencies: ["NarniaSystem", "NarniaLanguage", "NarniaShell", "NarniaStore", "NarniaCrypto"]),
        .testTarget(name: "NarniaCoverTests", dependencies: ["NarniaCover", "NarniaLanguage"]),
    ],
    swiftLanguageModes: [.v6]
)
