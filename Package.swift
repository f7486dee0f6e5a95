// swift-tools-version:6.0
// Narnia: an encrypted file vault behind a wardrobe. See README.md, "Architecture".
import PackageDescription

let package = Package(
    name: "Narnia",
    products: [
        .executable(name: "narnia", targets: ["narnia"]),
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
        .executableTarget(name: "narnia", dependencies: ["NarniaShell", "NarniaStore", "NarniaCrypto", "CEditLine"]),

        .testTarget(name: "NarniaCryptoTests", dependencies: ["NarniaCrypto"], resources: [.copy("Vectors")]),
        .testTarget(name: "NarniaStoreTests", dependencies: ["NarniaStore", "NarniaCrypto"]),
        .testTarget(name: "NarniaShellTests", dependencies: ["NarniaShell", "NarniaStore", "NarniaCrypto"]),
    ],
    swiftLanguageModes: [.v5]
)
