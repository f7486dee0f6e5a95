"""The man page and the shell completions: lint-clean, complete, and working.

Run with `python3 -m pytest integration`. Needs mandoc, bash, zsh and fish
(Debian: `apt-get install -y mandoc python3-pytest zsh fish bash-completion`);
a test whose tool is missing is skipped and says which package to install.

docs/INTERFACE.md is the spec: test_man_documents_every_command reads its
"Commands and flags" block, so a command added there without a man page entry
fails here.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import q
from terminal import Terminal

REPO = Path(__file__).resolve().parent.parent
MAN = REPO / "man" / "narnia.1"
INTERFACE = REPO / "docs" / "INTERFACE.md"
COMPLETIONS = REPO / "completions"
BASH_SCRIPT = COMPLETIONS / "narnia.bash"
ZSH_SCRIPT = COMPLETIONS / "_narnia"
FISH_SCRIPT = COMPLETIONS / "narnia.fish"


def need(tool, package=None):
    """Skips the calling test, naming the Debian package, when `tool` is not installed."""
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} is not installed (apt-get install -y {package or tool})")
    return path


def run(argv, **kwargs):
    kwargs.setdefault("timeout", 60)
    return subprocess.run(argv, capture_output=True, text=True, **kwargs)


@pytest.fixture
def host_tree(tmp_path):
    """A folder holding two subfolders (one with a space) and a file, for path completion."""
    (tmp_path / "sub dir").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "file.txt").write_text("x\n")
    return tmp_path


def isolated_env(home):
    """An environment that reads no user configuration of any shell."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "TERM": "dumb",
        "LANG": "C.UTF-8",
    }


# ---------------------------------------------------------------------------
# The man page


def render_man():
    """The man page as plain text, one command head per line (wide, no overstrike)."""
    need("mandoc")
    result = run(["mandoc", "-Tascii", "-O", "width=250", str(MAN)])
    assert result.returncode == 0, result.stderr
    return re.sub(r".\x08", "", result.stdout)


def section(text, name):
    """The body of the rendered section `name`, up to the next section heading."""
    match = re.search(rf"^{re.escape(name)}\n(.*?)(?=^[A-Z][A-Z ]+\n|\Z)", text, re.M | re.S)
    assert match, f"the man page has no {name} section"
    return match.group(1)


def squeeze(text):
    return re.sub(r"\s+", "", text)


def command_heads():
    """The heads of the tagged entries in COMMANDS, whitespace removed. A short head
    shares its line with the body, two spaces or more apart."""
    heads = set()
    for line in section(render_man(), "COMMANDS").splitlines():
        if line.strip():
            heads.add(squeeze(line))
            heads.add(squeeze(re.split(r"\s{2,}", line.strip())[0]))
    return heads


def interface_commands():
    """The usages in INTERFACE.md's "Commands and flags" block, without their comments."""
    text = INTERFACE.read_text()
    match = re.search(r"^## Commands and flags\s*\n+```\n(.*?)^```", text, re.M | re.S)
    assert match, "docs/INTERFACE.md has no fenced block under '## Commands and flags'"
    usages = [re.split(r"\s{2,}", line.strip())[0] for line in match.group(1).splitlines() if line.strip()]
    assert len(usages) > 15, usages
    return usages


def test_man_is_lint_clean():
    mandoc = need("mandoc")
    result = run([mandoc, "-Tlint", "-W", "warning", str(MAN)])
    report = (result.stdout + result.stderr).strip()
    assert report == "" and result.returncode == 0, f"mandoc -Tlint -W warning:\n{report}"


@pytest.mark.parametrize("usage", interface_commands())
def test_man_documents_every_command(usage):
    """Each command of INTERFACE.md, with exactly its flags, heads an entry in COMMANDS."""
    assert squeeze(usage) in command_heads(), f"COMMANDS has no entry '{usage}'"


def test_every_command_of_the_table_is_documented(vault):
    """The command table (`help`, which reads it) against INTERFACE.md's block and the man
    page: a new command cannot be left out of either. Every usage `help CMD` prints heads an
    entry in INTERFACE.md's block, and so, by the test above, one in the man page."""
    names = [line.split()[0] for line in vault.ok("help").out_lines if line[:1] not in ("", " ")]
    assert len(names) > 20, names
    documented = {squeeze(u) for u in interface_commands()}
    for name in names:
        usage = vault.ok(f"help {q(name)}").out_lines[0].removeprefix("usage: ")
        # `import ... | - NAME` may be listed as two lines, one per form.
        first, *others = usage.split(" | ")
        forms = [usage] if squeeze(usage) in documented else [first] + [f"{name} {o}" for o in others]
        for form in forms:
            listed = squeeze(form) in documented or any(d.startswith(squeeze(form) + ",") for d in documented)
            assert listed, f"`{form}` (from `help {name}`) is not in INTERFACE.md's command block"


@pytest.mark.parametrize("usage", [
    "set [KEY [VALUE]]",
    "remove-originals on | off",
    "hide-names on | off",
    "panic",
])
def test_man_documents_the_brief_commands_and_settings(usage):
    """Commands and `set` keys that BRIEF.md fixes but INTERFACE.md's block does not list."""
    assert squeeze(usage) in command_heads(), f"COMMANDS has no entry '{usage}'"


def test_man_synopsis_has_every_invocation():
    synopsis = squeeze(section(render_man(), "SYNOPSIS"))
    for form in [
        "narnia [--vault DIR]",
        "init", "enter", "drop",
        "-c 'CMD; CMD'",
        "-b FILE",
        "[--passphrase-file FILE | --passphrase-fd N]",
        "[--keep-going]",
        "narnia --version",
        "narnia --help",
    ]:
        assert squeeze(form) in synopsis, f"SYNOPSIS lacks {form}"


@pytest.mark.parametrize("name", [
    "DESCRIPTION", "COMMANDS", "BATCH MODE", "THE WARDROBE AND THE DOOR", "ENVIRONMENT",
    "FILES", "EXIT STATUS", "SECURITY", "EXAMPLES", "SEE ALSO",
])
def test_man_has_section(name):
    assert section(render_man(), name).strip()


@pytest.mark.parametrize("variable", [
    "NARNIA_VAULT", "XDG_DATA_HOME", "NO_COLOR", "HOME", "TERM", "NARNIA_INSECURE_TEST_KDF",
])
def test_man_documents_environment(variable):
    environment = section(render_man(), "ENVIRONMENT")
    assert re.search(rf"^ {{5}}{variable}\b", environment, re.M), f"ENVIRONMENT lacks {variable}"


def test_man_exit_status_matches_interface():
    status = section(render_man(), "EXIT STATUS")
    entries = re.findall(r"^ {5}(\d)\b", status, re.M)
    assert entries == ["0", "1", "2", "3"]


# ---------------------------------------------------------------------------
# bash


def bash_complete(words, cwd):
    """COMPREPLY after calling the completion function for `words` (the last is the cursor's)."""
    bash = need("bash")
    script = (
        f"source {str(BASH_SCRIPT)!r} || exit 99\n"
        'fn=$(complete -p narnia | sed -n "s/.*-F \\([^ ]*\\) .*/\\1/p")\n'
        '[[ -n $fn ]] || { echo "narnia has no -F completion" >&2; exit 98; }\n'
        'COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))\n'
        'COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}\n'
        '"$fn" narnia "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"\n'
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    result = run([bash, "--norc", "--noprofile", "-c", script, "bash", *words],
                 cwd=cwd, env=isolated_env(cwd))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return [line for line in result.stdout.splitlines() if line]


def test_bash_script_is_valid():
    bash = need("bash")
    result = run([bash, "-n", str(BASH_SCRIPT)])
    assert result.returncode == 0, result.stderr


def test_bash_completes_long_option(host_tree):
    assert "--vault" in bash_complete(["narnia", "--va"], host_tree)


def test_bash_completes_subcommand(host_tree):
    assert bash_complete(["narnia", "e"], host_tree) == ["enter"]
    assert sorted(bash_complete(["narnia", ""], host_tree)) == ["drop", "enter", "init"]


def test_bash_drop_completes_host_files_and_its_flags(host_tree):
    assert "file.txt" in bash_complete(["narnia", "drop", ""], host_tree)
    assert "--show-key" in bash_complete(["narnia", "--vault", "v", "drop", "--"], host_tree)


def test_bash_completes_every_option(host_tree):
    offered = set(bash_complete(["narnia", "-"], host_tree))
    assert {"--vault", "--passphrase-file", "--passphrase-fd", "--keep-going", "-v", "--verbose",
            "--version", "--help", "-c", "-b"} <= offered


def test_bash_offers_no_batch_option_after_init_or_enter(host_tree):
    """Review EU-5: --keep-going and -v go with -c, -b or piped commands; after init or enter
    they are usage errors (exit 2), and were offered."""
    for mode in ("init", "enter"):
        offered = set(bash_complete(["narnia", mode, "-"], host_tree))
        assert "--vault" in offered and not offered & {"--keep-going", "-v", "--verbose"}, (mode, offered)


def test_bash_vault_completes_directories_only(host_tree):
    assert sorted(bash_complete(["narnia", "--vault", ""], host_tree)) == ["other", "sub dir"]


def test_bash_completes_the_equals_forms(host_tree):
    """Review CA-6: `--vault=DIR` and `--passphrase-file=FILE` got no completion in bash."""
    assert sorted(bash_complete(["narnia", "--vault", "=", ""], host_tree)) == ["other", "sub dir"]
    assert bash_complete(["narnia", "--vault", "=", "ot"], host_tree) == ["other"]
    assert "file.txt" in bash_complete(["narnia", "--passphrase-file", "=", "fi"], host_tree)
    assert bash_complete(["narnia", "--vault", "=", "other", "e"], host_tree) == ["enter"]


def test_bash_batch_file_completes_files_and_stdin(host_tree):
    offered = bash_complete(["narnia", "-b", ""], host_tree)
    assert "file.txt" in offered and "-" in offered


def test_bash_no_subcommand_after_c(host_tree):
    assert bash_complete(["narnia", "-c", "ls", ""], host_tree) == []


# ---------------------------------------------------------------------------
# zsh


def zsh_setup():
    return (f"fpath=({str(COMPLETIONS)!r} $fpath); autoload -U compinit; compinit -u -D")


def test_zsh_script_syntax():
    zsh = need("zsh")
    result = run([zsh, "-n", str(ZSH_SCRIPT)])
    assert result.returncode == 0, result.stderr


def test_zsh_compinit_registers_and_loads(tmp_path):
    # Sourcing a #compdef file outside completion would run _arguments and fail, so the
    # file is loaded as compinit loads it: from $fpath, by its #compdef line.
    zsh = need("zsh")
    script = (
        f"{zsh_setup()}\n"
        "print -r -- comp=$_comps[narnia]\n"
        "autoload +X _narnia || exit 97\n"
        "print -r -- $(whence -w _narnia)\n"
    )
    result = run([zsh, "-f", "-c", script], cwd=tmp_path, env=isolated_env(tmp_path))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert "comp=_narnia" in result.stdout.splitlines()
    assert "_narnia: function" in result.stdout.splitlines()


def zsh_tab(line, expect, cwd, timeout=8.0):
    """Types `line` and Tab into an interactive zsh on a pseudo-terminal; returns what it
    echoed once `expect` (a regular expression) appears."""
    zsh = need("zsh")
    # an interactive zsh reading no startup files
    t = Terminal([zsh, "-f", "-i"], isolated_env(Path(cwd)), cwd)
    try:
        t.send(f"PS1='%% '; {zsh_setup()}; print READY$((6*7))\n")
        t.expect("READY42", timeout)
        start = len(t.output)
        t.send(line.encode() + b"\t")
        shown = t.read_until(lambda o: re.search(expect, o[start:].decode(errors="replace")), timeout)
        return shown[start:].decode(errors="replace")
    finally:
        t.close()


def test_zsh_tab_completes_long_option(host_tree):
    # An option whose value may follow its `=` completes with the `=`, as git's do.
    assert "narnia --vault=" in zsh_tab("narnia --va", "narnia --vault=", host_tree)


def test_zsh_tab_completes_subcommand(host_tree):
    assert "narnia enter " in zsh_tab("narnia e", "narnia enter ", host_tree)
    assert "narnia drop " in zsh_tab("narnia dr", "narnia drop ", host_tree)


def test_zsh_tab_drop_completes_host_files(host_tree):
    assert "file.txt" in zsh_tab("narnia drop fi", "file\\.txt", host_tree)


def test_zsh_tab_completes_the_equals_forms(host_tree):
    """Review CA-6: `--vault=DIR` and `--passphrase-file=FILE` got no completion in zsh."""
    assert "narnia --vault=other/" in zsh_tab("narnia --vault=ot", "narnia --vault=other/", host_tree)
    assert "--passphrase-file=file.txt" in zsh_tab("narnia --passphrase-file=fi", "file\\.txt", host_tree)


def test_zsh_tab_offers_no_batch_option_after_enter(host_tree):
    """Review EU-5, as in bash."""
    shown = zsh_tab("narnia enter --", "--vault", host_tree)
    assert "--vault" in shown and "--keep-going" not in shown and "--verbose" not in shown, shown


def test_zsh_tab_vault_lists_directories_only(host_tree):
    shown = zsh_tab("narnia --vault ", r"sub\\ dir/", host_tree)
    assert "other/" in shown and "sub\\ dir/" in shown and "file.txt" not in shown


# ---------------------------------------------------------------------------
# fish


def fish_complete(line, cwd):
    """The candidates (first column) fish offers for the command line `line`."""
    fish = need("fish")
    script = f"source {str(FISH_SCRIPT)!r}; or exit 99; complete -C {line!r}"
    result = run([fish, "--no-config", "-c", script], cwd=cwd, env=isolated_env(cwd))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return [row.split("\t")[0] for row in result.stdout.splitlines() if row]


def test_fish_script_syntax():
    fish = need("fish")
    result = run([fish, "--no-execute", str(FISH_SCRIPT)])
    assert result.returncode == 0, result.stderr


def test_fish_completes_long_option(host_tree):
    assert "--vault" in fish_complete("narnia --va", host_tree)


def test_fish_completes_subcommand(host_tree):
    assert fish_complete("narnia e", host_tree) == ["enter"]
    assert sorted(fish_complete("narnia ", host_tree)) == ["drop", "enter", "init"]


def test_fish_drop_completes_host_files_and_its_flags(host_tree):
    assert "file.txt" in fish_complete("narnia drop ", host_tree)
    assert "--show-key" in fish_complete("narnia drop --", host_tree)


def test_fish_offers_after_drop_only_what_drop_takes(host_tree):
    assert sorted(fish_complete("narnia drop -", host_tree)) == ["--help", "--quiet", "--show-key", "--verbose", "-h", "-q", "-v"]
    offered = set(fish_complete("narnia init -", host_tree))
    assert "-c" not in offered and "-b" not in offered, "a mode is chosen: -c and -b are usage errors now"
    assert "--vault" in offered


def test_fish_offers_no_batch_option_after_init_or_enter_and_no_mode_after_h(host_tree):
    """Review EU-5, as in bash; review EU-6: `-h` ends the line, as `--help` does."""
    for mode in ("init", "enter"):
        offered = set(fish_complete(f"narnia {mode} -", host_tree))
        assert "--vault" in offered and not offered & {"--keep-going", "-v", "--verbose"}, (mode, offered)
    assert fish_complete("narnia -h ", host_tree) == []


def test_fish_completes_every_option(host_tree):
    offered = set(fish_complete("narnia -", host_tree))
    assert {"--vault", "--passphrase-file", "--passphrase-fd", "--keep-going",
            "--version", "--help", "-c", "-b"} <= offered


def test_fish_vault_completes_directories_only(host_tree):
    assert sorted(fish_complete("narnia --vault ", host_tree)) == ["other/", "sub dir/"]


def test_fish_batch_file_completes_files_and_stdin(host_tree):
    offered = fish_complete("narnia -b ", host_tree)
    assert "file.txt" in offered and "-" in offered


def test_fish_no_subcommand_after_c(host_tree):
    assert fish_complete("narnia -c ls ", host_tree) == []
