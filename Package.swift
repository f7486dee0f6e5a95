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

        // Swift layers, lowest first. A layer never imports one above it.
        .target(name: "NarniaCrypto", dependencies: ["CSodium"]),
        .target(name: "NarniaStore", dependencies: ["NarniaCrypto"]),
        .target(name: "NarniaKinds", dependencies: ["NarniaStore", "CMagic"]),
        .target(name: "NarniaShell", dependencies: ["NarniaStore", "NarniaKinds", "NarniaCrypto"]),
        // The cover: the Wardrobe, a closet organiser that knows nothing of the vault.
        .target(name: "NarniaCover", dependencies: ["NarniaShell"]),
        .executableTarget(name: "narnia", dependencies: ["NarniaShell", "NarniaStore", "NarniaCrypto", "NarniaCover", "CEditLine"]),
        // Benchmarks (make bench): calls the library in process; see bench/run.sh.
        .executableTarget(name: "narnia-bench", dependencies: ["NarniaStore", "NarniaShell", "NarniaCrypto", "NarniaKinds"]),

        .testTarget(name: "NarniaCryptoTests", dependencies: ["NarniaCrypto"]),
        .testTarget(name: "NarniaStoreTests", dependencies: ["NarniaStore", "NarniaCrypto"], resources: [.copy("Vectors")]),
        .testTarget(name: "NarniaKindsTests", dependencies: ["NarniaKinds", "NarniaStore"]),
        .testTarget(name: "NarniaShellTests", dependencies: ["NarniaShell", "NarniaStore", "NarniaCrypto"]),
        .testTarget(name: "NarniaCoverTests", dependencies: ["NarniaCover", "NarniaShell"]),
    ],
    swiftLanguageModes: [.v5]
)
