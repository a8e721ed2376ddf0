# submit-lib.sh — what the two submit-batch.sh scripts share (sourced; they run on a login
# node from this folder, unlike the job scripts, which the scheduler spools and which
# therefore carry their own copy of these helpers).
die() {
	printf '%s: error: %s\n' "${me:-submit-batch.sh}" "$1" >&2
	exit "${2:-2}"
}
# Quote a word only when a shell needs it (as in the job scripts).
quote_word() {
	case $1 in
	'' | *[!A-Za-z0-9_./:=,+%@-]*) printf "'%s'" "${1//\'/\'\\\'\'}" ;;
	*) printf '%s' "$1" ;;
	esac
}
quote_line() {
	local word sep=''
	for word in "$@"; do
		printf '%s' "$sep"
		quote_word "$word"
		sep=' '
	done
	printf '\n'
}
