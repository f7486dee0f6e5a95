# Narnia — the two commands are `make run` and `make test`. See README.md.
PREFIX ?= /usr/local
BINDIR = $(PREFIX)/bin
MANDIR = $(PREFIX)/share/man/man1
BASHDIR = $(PREFIX)/share/bash-completion/completions
ZSHDIR = $(PREFIX)/share/zsh/site-functions
FISHDIR = $(PREFIX)/share/fish/vendor_completions.d

# Debian packages: the libraries we link, and what the tests and benchmarks drive.
BUILD_PACKAGES = libsodium-dev libmagic-dev libedit-dev pkg-config
# Optional at run time: the viewers `open` and the grid use (the shell says what is missing).
RUN_PACKAGES = less chafa mpv ffmpeg poppler-utils rclone
# Viewers the tests drive for real, and the tools that make the test corpus.
TEST_PACKAGES = python3-pytest python3-pytest-xdist locales mandoc btrfs-progs file bash-completion zsh fish less chafa ffmpeg poppler-utils libheif-examples rclone syncthing age strace bindfs fuse3 fusefat dosfstools ntfs-3g faketime
BENCH_PACKAGES = age time file rclone ffmpeg

SWIFT_FLAGS ?=
RELEASE = .build/release/narnia

.PHONY: all deps test-deps bench-deps build release run viewers test bench install clean

all: build

# Installs only what is missing, so repeated runs are quick and need no network.
define apt_install
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi
endef

deps:
	$(call apt_install,$(BUILD_PACKAGES))

test-deps: deps
	$(call apt_install,$(TEST_PACKAGES))

bench-deps: deps
	$(call apt_install,$(BENCH_PACKAGES))

build: deps
	swift build $(SWIFT_FLAGS)

release: deps
	swift build -c release $(SWIFT_FLAGS)

run: release
	$(RELEASE)

# The viewers are optional: without them `open` says which package is missing.
viewers:
	$(call apt_install,$(RUN_PACKAGES))

# Every target imports only what Package.swift lets it (the cover: the language alone).
test: test-deps release
	swift build --build-tests --explicit-target-dependency-import-check error $(SWIFT_FLAGS)
	swift test --skip-build $(SWIFT_FLAGS)
	NARNIA_BIN=$(CURDIR)/$(RELEASE) bash integration/run-all.sh

bench: bench-deps release
	swift build -c release --product narnia-bench $(SWIFT_FLAGS)
	NARNIA_BIN=$(CURDIR)/$(RELEASE) NARNIA_BENCH_BIN=$(CURDIR)/.build/release/narnia-bench bash bench/run.sh

# Installs what `make release` built. As root (`sudo make install`) it builds only when nothing
# is built yet, and refuses a build older than the sources (review CC-11): SwiftPM is not run as
# root in your `.build`, and sudo's PATH may not hold swift (review CA-5). It ends saying where
# zsh and fish may not look for the completions.
install: $(if $(filter 0,$(shell id -u)),$(RELEASE),release)
	@if [ -n "$$(find Package.swift Sources -newer $(RELEASE) -print -quit)" ]; then \
		echo "make install: $(RELEASE) is older than the sources: run 'make release' as yourself first" >&2; exit 1; fi
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR) $(DESTDIR)$(BASHDIR) $(DESTDIR)$(ZSHDIR) $(DESTDIR)$(FISHDIR)
	install -m 755 $(RELEASE) $(DESTDIR)$(BINDIR)/narnia
	install -m 644 man/narnia.1 $(DESTDIR)$(MANDIR)/narnia.1
	install -m 644 completions/narnia.bash $(DESTDIR)$(BASHDIR)/narnia
	install -m 644 completions/_narnia $(DESTDIR)$(ZSHDIR)/_narnia
	install -m 644 completions/narnia.fish $(DESTDIR)$(FISHDIR)/narnia.fish
	@echo "zsh: unless $(ZSHDIR) is on your fpath, add 'fpath+=($(ZSHDIR))' before compinit in ~/.zshrc"
	@echo "fish: unless $(FISHDIR) is searched (XDG_DATA_DIRS holds $(PREFIX)/share), copy narnia.fish to ~/.config/fish/completions"

$(RELEASE):
	$(MAKE) release

clean:
	rm -rf .build
