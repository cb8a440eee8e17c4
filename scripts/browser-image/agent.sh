# The browser computer's agent: one request a line on ttyS1, one reply a line, nothing else written.
# Request:  <rid> <op> <arg>...   (strings travel base64-encoded, "-" for empty; numbers plain)
# Reply:    @<rid> ok <field>...  or  @<rid> err <CODE> <base64 message>
# Jobs run in their own session with stdout and stderr in files under /run/j/<job>; the host pulls
# them with `poll`, so only this loop ever writes to the port and replies never interleave.
umask 022
mkdir -p /run/j
b() { if [ -s "$1" ]; then base64 -w0 "$1"; else printf -; fi; }
d() { [ "$1" = - ] || printf %s "$1" | base64 -d; }
e() { printf %s "$1" | base64 -w0; }
err() { echo "@$rid err $1 $(e "$2")"; }
okid() { case $1 in '' | *[!A-Za-z0-9_-]*) return 1 ;; esac; }
family() { # signal every process whose session is the job's (setsid'd children escape only by a new setsid)
	for s in /proc/[0-9]*/stat; do
		read -r l <"$s" 2>/dev/null || continue
		set -- ${l##*) }
		[ "$4" = "$2" ] || continue
		p=${s#/proc/}
		kill "-$1" "${p%/stat}" 2>/dev/null
	done
}
echo "@0 ready 1 $(cut -d' ' -f1 /proc/uptime)"
while read -r rid op a1 a2 a3 a4 a5; do
	case $op in
	ping) echo "@$rid ok pong" ;;
	run) # job cmd cwd env
		okid "$a1" || { err INVALID_ARGUMENT "bad job id"; continue; }
		j=/run/j/$a1
		[ -e "$j" ] && { err FILE_EXISTS "job $a1 exists"; continue; }
		mkdir -p "$j"
		d "$a2" >"$j/cmd"
		d "$a3" >"$j/cwd"
		d "$a4" >"$j/env"
		(
			cd "$(cat "$j/cwd")" 2>/dev/null || { echo "cannot enter $(cat "$j/cwd")" >"$j/err"; echo 126 >"$j/rc"; exit; }
			while IFS= read -r kv; do export "$kv"; done <"$j/env"
			setsid sh "$j/cmd" <"/dev/null" >"$j/out" 2>"$j/err" &
			echo $! >"$j/pid"
			wait $!
			echo $? >"$j/rc.tmp" && mv "$j/rc.tmp" "$j/rc"
		) >/dev/null 2>&1 &
		while [ ! -s "$j/pid" ] && [ ! -e "$j/rc" ]; do :; done
		echo "@$rid ok $(cat "$j/pid" 2>/dev/null || echo 0)"
		;;
	poll) # job outOffset errOffset maxBytes
		j=/run/j/$a1
		okid "$a1" && [ -d "$j" ] || { err NOT_FOUND "no job $a1"; continue; }
		rc=- && [ -e "$j/rc" ] && rc=$(cat "$j/rc")
		tail -c +$((a2 + 1)) "$j/out" 2>/dev/null | head -c "$a4" >/run/j/.o
		tail -c +$((a3 + 1)) "$j/err" 2>/dev/null | head -c "$a4" >/run/j/.e
		echo "@$rid ok $rc $(b /run/j/.o) $(b /run/j/.e)"
		;;
	kill) # job signal root|family
		j=/run/j/$a1
		okid "$a1" && [ -s "$j/pid" ] || { err NOT_FOUND "no job $a1"; continue; }
		pid=$(cat "$j/pid")
		if [ "$a3" = root ]; then kill "-$a2" "$pid" 2>/dev/null; else
			kill "-$a2" "-$pid" 2>/dev/null
			family "$a2" "$pid"
		fi
		echo "@$rid ok"
		;;
	forget) okid "$a1" && rm -rf "/run/j/$a1"; echo "@$rid ok" ;;
	read) # path offset maxBytes -> size bytes
		p=$(d "$a1")
		[ -e "$p" ] || { err NOT_FOUND "$p does not exist"; continue; }
		[ -f "$p" ] || { err INVALID_ARGUMENT "$p is not a regular file"; continue; }
		size=$(stat -L -c %s "$p")
		tail -c +$((a2 + 1)) "$p" 2>/dev/null | head -c "$a3" >/run/j/.r
		echo "@$rid ok $size $(b /run/j/.r) $(e "$(realpath "$p")")"
		;;
	put) # token path chunk: append a chunk to the write's temporary file beside the target
		p=$(d "$a2")
		okid "$a1" || { err INVALID_ARGUMENT "bad token"; continue; }
		mkdir -p "$(dirname "$p")" 2>/dev/null
		d "$a3" >>"$(dirname "$p")/.paddock-w-$a1" || { err INVALID_ARGUMENT "cannot write beside $p"; continue; }
		echo "@$rid ok"
		;;
	commit) # token path mode(overwrite|create): rename into place (create: a hard link, which fails if the name exists)
		p=$(d "$a2")
		okid "$a1" || { err INVALID_ARGUMENT "bad token"; continue; }
		t="$(dirname "$p")/.paddock-w-$a1"
		[ -e "$t" ] || : >"$t" 2>/dev/null || { err INVALID_ARGUMENT "cannot write $p"; continue; }
		[ -d "$p" ] && { rm -f "$t"; err INVALID_ARGUMENT "$p is a directory"; continue; }
		created=true && [ -e "$p" ] && created=false
		if [ "$a3" = create ]; then
			ln "$t" "$p" 2>/dev/null || { rm -f "$t"; err FILE_EXISTS "$p exists"; continue; }
			rm -f "$t"
		else
			mv -f "$t" "$p" || { rm -f "$t"; err INVALID_ARGUMENT "cannot replace $p"; continue; }
		fi
		echo "@$rid ok $(stat -c %s "$p") $created"
		;;
	list) # path -> one base64 line of "type size mtime mode name" rows
		p=$(d "$a1")
		[ -d "$p" ] || { err NOT_FOUND "$p is not a directory"; continue; }
		(cd "$p" && for f in .* *; do
			case $f in . | ..) continue ;; esac
			[ -e "$f" ] || [ -L "$f" ] || continue
			if [ -L "$f" ]; then t=symlink; elif [ -d "$f" ]; then t=dir; elif [ -f "$f" ]; then t=file; else t=other; fi
			echo "$t $(stat -c '%s %Y %a' "$f") $f"
		done) >/run/j/.l 2>/dev/null
		echo "@$rid ok $(b /run/j/.l)"
		;;
	realpath) p=$(d "$a1"); r=$(realpath "$p" 2>/dev/null) && echo "@$rid ok $(e "$r")" || echo "@$rid ok -" ;;
	readlink) p=$(d "$a1"); r=$(readlink "$p" 2>/dev/null) && echo "@$rid ok $(e "$r")" || echo "@$rid ok -" ;;
	which) n=$(d "$a1"); r=$(command -v "$n" 2>/dev/null) && echo "@$rid ok $(e "$r")" || echo "@$rid ok -" ;;
	'') ;;
	*) err INVALID_ARGUMENT "unknown op $op" ;;
	esac
done
