# The browser computer's agent: one request a line on ttyS1, one reply a line.
# Request:  <rid> <op> <arg>...   (strings travel base64-encoded, "-" for empty; numbers plain)
# Reply:    @<rid> ok <field>...  or  @<rid> err <CODE> <base64 message>
# Events, pushed by a job's own processes on the same port whenever they happen:
#   @d <job> <fd> <base64 bytes>   what the job wrote on fd 1 or 2, one line a read of its pipe
#   @e <job> <fd>                  that fd reached its end
#   @x <job> <status>              the job's root process exited with this status
# Every reply and event is one echo, so one write(2): the tty never interleaves two lines.
# A job writes into pipes: a job that writes faster than the port carries waits on its pipe.
umask 022
mkdir -p /run/j /run/c
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
fwd() { # job fd: pushes what the job writes on one fd, a line a read of its pipe, then its end
	while c=$(dd bs=49152 count=1 2>/dev/null | base64 -w0) && [ -n "$c" ]; do echo "@d $1 $2 $c"; done
	echo "@e $1 $2"
}
conn() { # conn port: a preview connection to 127.0.0.1:port. The host's bytes reach nc through
	# the FIFO c/in, which a sleeping holder keeps open so that nc sees no end between two writes;
	# what nc reads from the server is pushed like a job's stdout (@d, @e), its end as @x.
	c=/run/c/$1
	fwd "$1" 1 <"$c/out" &
	sleep 2147483647 >"$c/in" &
	echo $! >"$c/hold"
	nc 127.0.0.1 "$2" <"$c/in" >"$c/out" 2>/dev/null &
	echo $! >"$c/nc"
	wait $!
	r=$?
	read -r h <"$c/hold" && kill "$h" 2>/dev/null
	echo "@x $1 $r"
}
listening() { # port: whether a socket listens on it (any local address, IPv4 or IPv6)
	h=$(printf ':%04X' "$1")
	awk -v h="$h" '$4 == "0A" && substr($2, length($2) - 4) == h { f = 1 } END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
job() { # job script: runs the script in its own session with its stdout and stderr on pipes
	j=/run/j/$1
	d "$2" >"$j/cmd"
	mkfifo "$j/o" "$j/e"
	fwd "$1" 1 <"$j/o" &
	fwd "$1" 2 <"$j/e" &
	setsid sh "$j/cmd" </dev/null >"$j/o" 2>"$j/e" &
	echo $! >"$j/pid"
	wait $!
	echo "@x $1 $?"
}
echo "@0 ready 1 $(cut -d' ' -f1 /proc/uptime)"
while read -r rid op a1 a2 a3 a4 a5; do
	case $op in
	ping) echo "@$rid ok pong" ;;
	hello) # epoch seed: a machine restored from the image's snapshot takes the time and fresh randomness, then announces itself again
		case $a1 in '' | *[!0-9]*) ;; *) date -s "@$a1" >/dev/null 2>&1 ;; esac
		d "$a2" >/dev/urandom 2>/dev/null
		echo "@0 ready 1 $(cut -d' ' -f1 /proc/uptime)"
		;;
	winsize) # rows cols: the terminal's window (its foreground programs get SIGWINCH)
		case $a1$a2 in '' | *[!0-9]*) err INVALID_ARGUMENT "bad window size"; continue ;; esac
		stty -F /dev/ttyS2 rows "$a1" cols "$a2" 2>/dev/null && echo "@$rid ok" || err INVALID_ARGUMENT "cannot size the terminal"
		;;
	mkdir) p=$(d "$a1"); mkdir -p "$p" 2>/dev/null && echo "@$rid ok" || err INVALID_ARGUMENT "cannot create $p" ;;
	run) # job script: the job starts in the background; the answer is its supervisor's pid
		okid "$a1" || { err INVALID_ARGUMENT "bad job id"; continue; }
		mkdir "/run/j/$a1" 2>/dev/null || { err FILE_EXISTS "job $a1 exists"; continue; }
		job "$a1" "$a2" &
		echo "@$rid ok $!"
		;;
	kill) # job signal root|family
		j=/run/j/$a1
		okid "$a1" && [ -d "$j" ] || { err NOT_FOUND "no job $a1"; continue; }
		n=0 && while [ ! -s "$j/pid" ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
		read -r pid <"$j/pid" 2>/dev/null || { err NOT_FOUND "job $a1 has no process"; continue; }
		if [ "$a3" = root ]; then kill "-$a2" "$pid" 2>/dev/null; else
			kill "-$a2" "-$pid" 2>/dev/null
			family "$a2" "$pid"
		fi
		echo "@$rid ok"
		;;
	forget) okid "$a1" && rm -rf "/run/j/$a1" & echo "@$rid ok" ;;
	tcp) # conn port: connect a preview connection; refused when nothing listens there
		okid "$a1" || { err INVALID_ARGUMENT "bad connection id"; continue; }
		case $a2 in '' | *[!0-9]*) err INVALID_ARGUMENT "bad port"; continue ;; esac
		listening "$a2" || { err NOT_FOUND "Nothing listens on port $a2 inside the computer; start a server on that port first."; continue; }
		mkdir "/run/c/$a1" 2>/dev/null || { err FILE_EXISTS "connection $a1 exists"; continue; }
		mkfifo "/run/c/$a1/in" "/run/c/$a1/out"
		conn "$a1" "$a2" &
		echo "@$rid ok"
		;;
	tcpw) # conn n, then n characters of base64 after the line: bytes for the server
		case $a2 in '' | *[!0-9]*) err INVALID_ARGUMENT "bad chunk length"; continue ;; esac
		head -c "$a2" >/run/j/.p
		okid "$a1" && [ -p "/run/c/$a1/in" ] || { err NOT_FOUND "no connection $a1"; continue; }
		# read-write: opening a FIFO so never blocks, even when nc has gone
		base64 -d </run/j/.p 1<>"/run/c/$a1/in" && echo "@$rid ok" || err INVALID_ARGUMENT "cannot write to connection $a1"
		;;
	tcpe) # conn: the host sent everything (nc then shuts its sending side down)
		okid "$a1" && [ -d "/run/c/$a1" ] && { read -r p <"/run/c/$a1/hold"; kill "$p"; } 2>/dev/null
		echo "@$rid ok"
		;;
	tcpx) # conn: drop the connection
		if okid "$a1" && [ -d "/run/c/$a1" ]; then
			for f in nc hold; do read -r p <"/run/c/$a1/$f" && kill "$p"; done 2>/dev/null
			rm -rf "/run/c/$a1"
		fi
		echo "@$rid ok"
		;;
	read) # path offset maxBytes -> size bytes
		p=$(d "$a1")
		[ -e "$p" ] || { err NOT_FOUND "$p does not exist"; continue; }
		[ -f "$p" ] || { err INVALID_ARGUMENT "$p is not a regular file"; continue; }
		size=$(stat -L -c %s "$p")
		tail -c +$((a2 + 1)) "$p" 2>/dev/null | head -c "$a3" >/run/j/.r
		echo "@$rid ok $size $(b /run/j/.r) $(e "$(realpath "$p")")"
		;;
	put) # token n, then n characters of base64 after the line: a chunk of a write, taken with one
		# head -c (the shell's read costs a system call per byte) whatever happens next, so that no
		# byte of it is ever read as a request; then appended to the write's staging file in /run/j
		case $a2 in '' | *[!0-9]*) err INVALID_ARGUMENT "bad chunk length"; continue ;; esac
		head -c "$a2" >/run/j/.p
		okid "$a1" || { err INVALID_ARGUMENT "bad token"; continue; }
		base64 -d </run/j/.p >>"/run/j/w-$a1" || { err INVALID_ARGUMENT "cannot stage a write"; continue; }
		echo "@$rid ok"
		;;
	commit) # token dir name mode(overwrite|create): the staged bytes become dir/name, placed from
		# inside dir (entered with cd -P and checked to be dir, so a link swapped onto the path in
		# between is never followed): rename into place, or (create) a hard link, which fails if
		# the name exists. Nothing is created anywhere else, and no directory is made.
		okid "$a1" || { err INVALID_ARGUMENT "bad token"; continue; }
		w="/run/j/w-$a1"
		[ -e "$w" ] || : >"$w"
		dir=$(d "$a2")
		name=$(d "$a3")
		r=$(
			cd -P -- "$dir" 2>/dev/null || { echo "NOT_FOUND the directory $dir does not exist"; exit; }
			[ "$(pwd -P)" = "$dir" ] || { echo "INVALID_ARGUMENT $dir changed while it was written to; try again"; exit; }
			[ -d "$name" ] && [ ! -L "$name" ] && { echo "INVALID_ARGUMENT $dir/$name is a directory"; exit; }
			t=".paddock-w-$a1"
			cat "$w" >"$t" 2>/dev/null || { rm -f "$t"; echo "INVALID_ARGUMENT cannot write in $dir"; exit; }
			created=true && { [ -e "$name" ] || [ -L "$name" ]; } && created=false
			if [ "$a4" = create ]; then
				ln "$t" "$name" 2>/dev/null || { rm -f "$t"; echo "FILE_EXISTS $dir/$name exists"; exit; }
				rm -f "$t"
			else
				mv -f "$t" "$name" || { rm -f "$t"; echo "INVALID_ARGUMENT cannot replace $dir/$name"; exit; }
			fi
			echo "ok $(stat -c %s "$name") $created"
		)
		rm -f "$w"
		case $r in
		ok*) echo "@$rid $r" ;;
		*) err "${r%% *}" "${r#* }" ;;
		esac
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
	kind) # path -> what it is, not following a link at its end: dir, file, other, missing, or link and its text
		p=$(d "$a1")
		if [ -L "$p" ]; then
			r=$(readlink "$p") && echo "@$rid ok link $(e "$r")" || echo "@$rid ok missing"
		elif [ -d "$p" ]; then echo "@$rid ok dir"
		elif [ -f "$p" ]; then echo "@$rid ok file"
		elif [ -e "$p" ]; then echo "@$rid ok other"
		else echo "@$rid ok missing"; fi
		;;
	which) n=$(d "$a1"); r=$(command -v "$n" 2>/dev/null) && echo "@$rid ok $(e "$r")" || echo "@$rid ok -" ;;
	'') ;;
	*) err INVALID_ARGUMENT "unknown op $op" ;;
	esac
done
