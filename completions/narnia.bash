# bash completion for narnia(1): the program's own command line.
# Install as /usr/share/bash-completion/completions/narnia (or source it).
# Keep in step with man/narnia.1 and docs/INTERFACE.md.

_narnia()
{
    local cur=${COMP_WORDS[COMP_CWORD]}
    local prev=
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()
    # One candidate a line, so that names with spaces stay whole.
    local IFS=$'\n'
    # `--vault=DIR`: bash splits the word at the `=` (COMP_WORDBREAKS), the option before it.
    if [[ $cur == = ]]; then
        cur=
    elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
        prev=${COMP_WORDS[COMP_CWORD - 2]}
    fi

    # The argument of an option.
    case $prev in
        --vault)
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -d -- "$cur"))
            return
            ;;
        --passphrase-file)
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -- "$cur"))
            return
            ;;
        -b)
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -- "$cur"))
            [[ -z $cur || $cur == - ]] && COMPREPLY+=(-)
            return
            ;;
        --passphrase-fd | -c)
            # A descriptor number or a command line: nothing sensible to offer.
            return
            ;;
    esac

    # What the words before the cursor have already chosen.
    local i word mode= source= keep= vault= done= verbose= shell=
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if [[ $word == drop ]]; then
            # `drop` takes host files (or - NAME) and its own flags; no passphrase.
            if [[ $cur == -* ]]; then
                COMPREPLY=($(IFS=' ' compgen -W "-v -q --verbose --quiet --show-key -h --help -" -- "$cur"))
            else
                compopt -o filenames 2>/dev/null
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            return
        fi
        case $word in
            --vault) vault=1; [[ ${COMP_WORDS[i + 1]} == = ]] && ((i++)); ((i++)) ;;
            --passphrase-file | --passphrase-fd) source=1; [[ ${COMP_WORDS[i + 1]} == = ]] && ((i++)); ((i++)) ;;
            -c | -b) mode=1; ((i++)) ;;
            --keep-going) keep=1 ;;
            -v | --verbose) verbose=1 ;;
            --version | --help | -h) done=1 ;;
            init | enter) mode=1; shell=1 ;;
        esac
    done
    [[ -n $done ]] && return

    if [[ $cur == -* ]]; then
        local opts=
        [[ -z $vault ]] && opts+=" --vault"
        [[ -z $source ]] && opts+=" --passphrase-file --passphrase-fd"
        # --keep-going and -v go with -c, -b or commands piped in: after init or enter they
        # are usage errors.
        [[ -z $keep && -z $shell ]] && opts+=" --keep-going"
        [[ -z $verbose && -z $shell ]] && opts+=" -v --verbose"
        [[ -z $mode ]] && opts+=" -c -b"
        ((COMP_CWORD == 1)) && opts+=" --version --help -h"
        COMPREPLY=($(IFS=' ' compgen -W "$opts" -- "$cur"))
    elif [[ -z $mode ]]; then
        COMPREPLY=($(IFS=' ' compgen -W "init enter drop" -- "$cur"))
    fi
}

complete -F _narnia narnia
