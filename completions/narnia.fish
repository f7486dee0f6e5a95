# fish completion for narnia(1): the program's own command line.
# Install as ~/.config/fish/completions/narnia.fish or into
# /usr/share/fish/vendor_completions.d; keep in step with man/narnia.1.

# True while no mode (init, enter, -c, -b) and neither --version nor --help
# has been given; the arguments of options are skipped, so that
# `narnia --vault init` has not chosen a mode.
function __narnia_needs_mode
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l skip 0
    for t in $tokens
        if test $skip -eq 1
            set skip 0
            continue
        end
        switch $t
            case --vault --passphrase-file --passphrase-fd
                set skip 1
            case init enter drop -c -b --version --help -h
                return 1
        end
    end
    return 0
end

# True when the last finished word is $argv[1] (its argument is being typed).
function __narnia_after
    set -l tokens (commandline -opc)
    test (count $tokens) -gt 1; and test "$tokens[-1]" = $argv[1]
end

# No file names unless an option asks for them.
complete -c narnia -f

# Everything after `drop` belongs to drop; -c, -b and the modes only until a mode is chosen.
set -l not_drop 'not __fish_seen_subcommand_from drop'
complete -c narnia -n $not_drop -l vault -x -a '(__fish_complete_directories (commandline -ct))' -d 'The store directory'
complete -c narnia -n $not_drop -l passphrase-file -r -F -d 'Read the passphrase from FILE'
complete -c narnia -n $not_drop -l passphrase-fd -x -d 'Read the passphrase from descriptor N'
# --keep-going and -v go with -c, -b or commands piped in: after init or enter they are usage errors.
set -l not_shell 'not __fish_seen_subcommand_from drop init enter'
complete -c narnia -n $not_shell -l keep-going -d 'With -c or -b, go on after a failing command'
complete -c narnia -n $not_shell -s v -l verbose -d 'With -c or -b, echo each line before it runs'
complete -c narnia -n $not_drop -l version -d 'Print the version and exit'
complete -c narnia -n $not_drop -s h -l help -d 'Print a usage summary and exit'
complete -c narnia -n '__narnia_needs_mode; or __narnia_after -c' -s c -x -d 'Run commands in the vault, then exit'
complete -c narnia -n '__narnia_needs_mode; or __narnia_after -b' -s b -r -F -a - -d 'Run a batch file (- for standard input)'

complete -c narnia -n __narnia_needs_mode -a init -d 'Create a vault'
complete -c narnia -n __narnia_needs_mode -a enter -d 'Passphrase, then the vault shell'
complete -c narnia -n __narnia_needs_mode -a drop -d 'Add files to the inbox, no passphrase'

# After `drop`: host files, - NAME, and the drop command's flags.
complete -c narnia -n '__fish_seen_subcommand_from drop' -F
complete -c narnia -n '__fish_seen_subcommand_from drop' -l show-key -d 'Print the key drops are sealed to'
complete -c narnia -n '__fish_seen_subcommand_from drop' -s v -l verbose -d 'A line per file dropped'
complete -c narnia -n '__fish_seen_subcommand_from drop' -s q -l quiet -d 'No line per file and no summary'
complete -c narnia -n '__fish_seen_subcommand_from drop' -s h -l help -d 'Print the usage of drop'
