# bash completion for xpcsfit and xpcsfit-mpi (docs/cli.md "Shell completion").
# Installed by `make install` to share/bash-completion/completions/xpcsfit; or, from a
# checkout:  source scripts/xpcsfit-completion.bash
#
# The options of a subcommand are read from its own `--help` (cached for the shell's
# life), so the completion never falls behind the program; the values of the options
# that take a file, a folder or a fixed word are completed here.

shopt -s extglob # the file patterns below (bash-completion sets it too)
_xpcsfit_commands="simulate validate nlsq cmc fit batch plot config version"
declare -gA _xpcsfit_opts_cache 2>/dev/null || true

_xpcsfit_options() {
	local prog=$1 cmd=$2 key="$1 $2"
	if [[ -z ${_xpcsfit_opts_cache[$key]+set} ]]; then
		_xpcsfit_opts_cache[$key]="$("$prog" "$cmd" --help 2>/dev/null |
			grep -o -- '--[a-z][a-z0-9-]*' | sort -u | tr '\n' ' ') -q --quiet -v -vv -h"
	fi
	printf '%s' "${_xpcsfit_opts_cache[$key]}"
}

_xpcsfit() {
	local cur prev prog cmd i
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	prog=${COMP_WORDS[0]}
	cmd=""
	# the command: the first word that is neither an option nor an option's value, or
	# the value of --method (homodyne's form: xpcsfit --config C.yaml --method nlsq)
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--method) ((i + 1 < COMP_CWORD)) && cmd=${COMP_WORDS[i + 1]}; break ;;
		--method=*) cmd=${COMP_WORDS[i]#--method=}; break ;;
		--config | --data | --out | --output-dir) ((i++)) ;;
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [[ -z $cmd && $prev != --@(config|data|out|output-dir|method) ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--help --version -q --quiet -v -vv --config --method" \
				-- "$cur"))
		else
			COMPREPLY=($(compgen -W "$_xpcsfit_commands" -- "$cur"))
		fi
		return 0
	fi
	case $prev in
	--config)
		COMPREPLY=($(compgen -f -X '!*.@(yaml|yml)' -- "$cur") $(compgen -d -- "$cur"))
		return 0 ;;
	--list | --overrides)
		COMPREPLY=($(compgen -f -- "$cur"))
		return 0 ;;
	--data)
		COMPREPLY=($(compgen -f -X '!*.@(h5|hdf5|hdf|nxs)' -- "$cur") $(compgen -d -- "$cur"))
		return 0 ;;
	--out)
		if [[ $cmd == simulate || $cmd == config ]]; then # a file (--force to replace it)
			COMPREPLY=($(compgen -f -- "$cur"))
		else
			COMPREPLY=($(compgen -d -- "$cur"))
		fi
		return 0 ;;
	--nlsq | --nlsq-result | --output-dir)
		COMPREPLY=($(compgen -d -- "$cur"))
		return 0 ;;
	--mode)
		COMPREPLY=($(compgen -W "static laminar_flow" -- "$cur"))
		return 0 ;;
	--layout)
		COMPREPLY=($(compgen -W "aps-u aps-old" -- "$cur"))
		return 0 ;;
	--device)
		COMPREPLY=($(compgen -W "cpu gpu auto" -- "$cur"))
		return 0 ;;
	--method)
		COMPREPLY=($(compgen -W "nlsq cmc fit" -- "$cur"))
		return 0 ;;
	--threads | --phi | --contrast | --offset | --noise | --seed | --frames | --initial | \
		--fix | --set | --max-iterations)
		return 0 ;;
	esac
	if [[ -z $cmd ]]; then
		return 0
	elif [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_xpcsfit_options "$prog" "$cmd")" -- "$cur"))
	elif [[ $cmd == plot ]]; then
		COMPREPLY=($(compgen -d -- "$cur")) # plot DIR: a result folder
	elif [[ $cmd == batch ]]; then
		COMPREPLY=($(compgen -f -X '!*.@(h5|hdf5|hdf|nxs)' -- "$cur") $(compgen -d -- "$cur"))
	fi
	return 0
}

complete -o filenames -F _xpcsfit xpcsfit xpcsfit-mpi
