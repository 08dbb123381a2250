#!/usr/bin/env bash
# Kernel matrix: boot Debian kernels under qemu-system-x86_64 (software
# emulation, no KVM) with an initramfs that holds the statically built BPF
# integration tests and C test targets, run the tests inside each guest, and
# fail on any test failure, missing result marker or a guest that runs out
# of time.
#
# The host kernel has no kprobes and no fentry; these guests have both, so
# this is where the kprobe and fentry paths are exercised for real. The
# guests have no compiler: C (testdata/**/*.c) and Go (testdata/go/*) test
# targets are prebuilt here, and stand-ins for gcc and go in the guest hand
# them to the tests that would build them. Kernels boot in parallel, one
# emulated CPU each. On this 2-core machine, shared with other work (load
# average 8-12), the matrix took 8-9 minutes, a guest 170-220 CPU seconds;
# with two busy loops besides, 13-15 minutes for the same CPU seconds.
#
# Time limits. Emulation is CPU-bound: on a loaded machine a guest gets
# less CPU per second and runs that much slower, so a wall-clock limit that
# suits an idle machine fails a healthy guest on a busy one. A guest's
# budget is therefore counted in CPU seconds of its qemu process (the
# emulation it was given), and a guest that prints nothing for a while is
# hung (a guest wedged idle uses no CPU); an absolute wall-clock limit
# bounds the rest. A wedged guest fails within the silence limit.
#
# Environment (all optional):
#   TICKPROF_KERNELS        apt packages to boot; a metapackage is resolved to
#                           the image it depends on
#                           (default: "linux-image-amd64 linux-image-6.12-amd64",
#                           i.e. Debian 12's 6.1 kernel and its 6.12 kernel)
#   TICKPROF_KERNEL_CACHE   download/extract cache
#                           (default: ${XDG_CACHE_HOME:-$HOME/.cache}/tickprof/kernels)
#   TICKPROF_KERNEL_PKGS    Go packages to test, each "PKG" or "PKG:REGEX"
#                           (-test.run filter)
#   TICKPROF_KERNEL_SKIP    -test.skip regex for every package (default: none)
#   TICKPROF_KERNEL_TIMEOUT CPU seconds of emulation per guest (default 900; a
#                           guest needs about 200 here)
#   TICKPROF_KERNEL_SILENCE seconds without console output after which a
#                           guest counts as hung (default 600)
#   TICKPROF_KERNEL_WALL    wall-clock seconds per guest, whatever the load
#                           (default 3600)
#   TICKPROF_KERNEL_SMP     guest CPUs (default 1, see below)
#   TICKPROF_KERNEL_KEEP=1  keep the work directory (initramfs, logs)
#   TICKPROF_KERNEL_APPEND  extra kernel command line (e.g. loglevel=7)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${TICKPROF_KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tickprof/kernels}
kernels=${TICKPROF_KERNELS:-"linux-image-amd64 linux-image-6.12-amd64"}
pkgs=${TICKPROF_KERNEL_PKGS:-"./internal/features ./internal/loader ./sampler:TestKernelFrames|TestOffCPUKernel ./cmd/tickprof:Doctor|Kernel|Syscall"}
# Windows under an overhead budget on kernel functions (a timing run).
[ -n "${TICKPROF_KERNEL_PKGS:-}" ] || pkgs="$pkgs ./timing:BudgetedKernelFunc"
guest_cpu=${TICKPROF_KERNEL_TIMEOUT:-900}
guest_silence=${TICKPROF_KERNEL_SILENCE:-600}
guest_wall=${TICKPROF_KERNEL_WALL:-3600}
smp=${TICKPROF_KERNEL_SMP:-1}
GO=${GO:-go}
command -v "$GO" >/dev/null || GO=/usr/local/go/bin/go

die() { echo "test-kernels: $*" >&2; exit 1; }
for tool in qemu-system-x86_64 cpio dpkg-deb gcc; do
	command -v "$tool" >/dev/null || die "$tool not found: apt-get install qemu-system-x86 cpio dpkg gcc"
done
busybox=$(command -v busybox || true)
# A static busybox: ldd calls it "not a dynamic executable" and fails.
[ -n "$busybox" ] && ! ldd "$busybox" >/dev/null 2>&1 ||
	die "a static busybox is needed: apt-get install busybox-static"

mkdir -p "$cache"
work=$(mktemp -d "${TMPDIR:-/tmp}/tickprof-kernels.XXXXXX")
if [ "${TICKPROF_KERNEL_KEEP:-0}" = 1 ]; then
	echo "test-kernels: work directory $work"
else
	trap 'rm -rf "$work"' EXIT
fi

# resolve PKG: a concrete linux-image-<version> package name. Metapackages
# (linux-image-amd64, linux-image-6.12-amd64) are followed to the image they
# depend on; without apt metadata the newest cached .deb of that family is used.
resolve() {
	local p=$1 dep
	dep=$(apt-cache depends --no-recommends --no-suggests "$p" 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
	if [ -n "$dep" ]; then echo "$dep"; return; fi
	if apt-cache show "$p" >/dev/null 2>&1 || ls "$cache"/"$p"_*_amd64.deb >/dev/null 2>&1; then
		case $p in
		linux-image-amd64 | linux-image-6.12-amd64) ;; # a metapackage: fall through
		*) echo "$p"; return ;;
		esac
	fi
	local family=linux-image-
	[ "$p" = linux-image-6.12-amd64 ] && family='linux-image-6\.12\.'
	[ "$p" = linux-image-amd64 ] && family='linux-image-6\.1\.0-'
	ls "$cache" 2>/dev/null | grep "^${family}.*_amd64\.deb$" | sort -V | tail -1 | cut -d_ -f1
}

# fetch PKG: the path of its vmlinuz, downloading and extracting once.
fetch() {
	local p=$1 deb dir
	deb=$(ls "$cache"/"$p"_*_amd64.deb 2>/dev/null | sort -V | tail -1 || true)
	if [ -z "$deb" ]; then
		echo "test-kernels: downloading $p" >&2
		(cd "$cache" && apt-get download "$p" >&2) || die "apt-get download $p failed"
		deb=$(ls "$cache"/"$p"_*_amd64.deb | sort -V | tail -1)
	fi
	dir=$cache/$p
	if ! ls "$dir"/boot/vmlinuz-* >/dev/null 2>&1; then
		mkdir -p "$dir.tmp"
		dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir.tmp" --wildcards './boot/vmlinuz-*' './boot/config-*'
		rm -rf "$dir" && mv "$dir.tmp" "$dir"
	fi
	ls "$dir"/boot/vmlinuz-*
}

# --- the initramfs contents, shared by every kernel -------------------------
img=$work/root
mkdir -p "$img"/{bin,dev,proc,sys,tmp,run,testbin,t,etc}
printf 'root:x:0:0:root:/tmp:/bin/sh\n' >"$img/etc/passwd"
printf 'root:x:0:\n' >"$img/etc/group"
cp "$busybox" "$img/bin/busybox"

echo "test-kernels: building static test binaries" >&2
CGO_ENABLED=0 "$GO" build -C "$root" -o "$img/bin/tickprof" ./cmd/tickprof
: >"$img/tests"
for spec in $pkgs; do
	pkg=${spec%%:*}
	run=""
	[ "$spec" != "$pkg" ] && run=${spec#*:}
	name=$(echo "${pkg#./}" | tr / _)
	[ -d "$root/$pkg" ] || die "package directory $pkg not found"
	mkdir -p "$img/t/$name"
	CGO_ENABLED=0 "$GO" test -C "$root" -c -o "$img/t/$name/test" "$pkg"
	if [ ! -f "$img/t/$name/test" ]; then
		echo "test-kernels: $pkg has no tests, skipped" >&2
		rmdir "$img/t/$name"
		continue
	fi
	[ -d "$root/$pkg/testdata" ] && cp -r "$root/$pkg/testdata" "$img/t/$name/"
	# Fields separated by \037 (not a tab: read would merge empty fields).
	printf '%s\037%s\037%s\n' "$name" "$run" "${TICKPROF_KERNEL_SKIP:-}" >>"$img/tests"
done

# C test targets: every testdata/*.c in the repository, built with the
# flags the tests use (the guests have no compiler). Tests find them through
# TICKPROF_TESTBIN: the binary for testdata/.../foo.c is $TICKPROF_TESTBIN/foo.
# They stay dynamically linked (tests probe libc functions), so the host's
# loader and the libraries they need go in the image too.
mkdir -p "$img/lib64" "$img/lib/x86_64-linux-gnu"
# unwind's programs are linked from several files with their own flags by
# its tests, which run on the host only.
find "$root" -path "$root/.git" -prune -o -path "$root/internal/unwind/testdata" -prune -o -path '*/testdata/*' -name '*.c' -print | while read -r src; do
	out=$img/testbin/$(basename "$src" .c)
	# A source may name flags its tests build it with (frameless code) on a
	# line " * matrix-cflags: FLAGS"; they come last, so they win.
	extra=$(sed -n 's/^ \* matrix-cflags: //p' "$src" | head -1)
	# shellcheck disable=SC2086 # FLAGS are words
	gcc -O1 -g -fno-omit-frame-pointer -pthread -o "$out" "$src" -lm $extra || die "gcc $src failed"
	ldd "$out" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | while read -r lib; do
		mkdir -p "$img$(dirname "$lib")"
		cp -L "$lib" "$img$lib"
	done
done
# The guests have no compiler. Tests that build a C target with gcc get this
# stand-in instead: it hands out the binary prebuilt above from the same
# source (with the flags the tests use) and fails loudly for any other.
cat >"$img/bin/gcc" <<'GCC'
#!/bin/sh
out= src=
while [ $# -gt 0 ]; do
	case $1 in
	-o) out=$2; shift ;;
	*.c) src=$1 ;;
	esac
	shift
done
bin=/testbin/$(basename "${src:-none}" .c)
if [ -z "$out" ] || [ ! -x "$bin" ]; then
	echo "gcc stand-in: no prebuilt binary for ${src:-?} (the kernel matrix prebuilds testdata/**/*.c)" >&2
	exit 1
fi
cp "$bin" "$out"
GCC
chmod +x "$img/bin/gcc"

# Nor a Go toolchain. Tests run "$GOROOT/bin/go build -o OUT [FLAGS] DIR" on
# a testdata/go/DIR main package; this stand-in hands out the binary prebuilt
# here for the same DIR and FLAGS (the variants below), and fails loudly for
# any other. goflagkey turns the flags into a file name, the same way on
# both sides.
goflagkey='printf "v%s" "$(printf "%s" "$flags" | tr -c "A-Za-z0-9" "_")"'
goroot=$("$GO" env GOROOT)
mkdir -p "$img/testbin/go" "$img$goroot/bin"
for dir in "$root"/testdata/go/*/; do
	grep -qs '^package main' "$dir"*.go || continue
	name=$(basename "$dir")
	mkdir -p "$img/testbin/go/$name"
	for variant in "CGO_ENABLED=0|" "CGO_ENABLED=0|-ldflags=-s -w" "CGO_ENABLED=1|-ldflags=-s -w -linkmode=external"; do
		cgo=${variant%%|*} flags=${variant#*|}
		flags=${flags:+ $flags}
		out=$img/testbin/go/$name/$(eval "$goflagkey")
		if [ -n "${flags# }" ]; then
			env "$cgo" "$GO" build -C "$dir" -o "$out" "${flags# }" . || die "go build $name${flags} failed"
		else
			env "$cgo" "$GO" build -C "$dir" -o "$out" . || die "go build $name failed"
		fi
		{ ldd "$out" 2>/dev/null || true; } | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | while read -r lib; do
			mkdir -p "$img$(dirname "$lib")"
			cp -L "$lib" "$img$lib"
		done
	done
done
cat >"$img$goroot/bin/go" <<GO
#!/bin/sh
[ "\$1" = build ] || { echo "go stand-in: the kernel matrix has no Go toolchain, only prebuilt testdata/go targets" >&2; exit 1; }
shift
out= src= flags=
while [ \$# -gt 0 ]; do
	case \$1 in
	-o) out=\$2; shift ;;
	-*) flags="\$flags \$1" ;;
	*) src=\$1 ;;
	esac
	shift
done
bin=/testbin/go/\$(basename "\${src:-none}")/\$($goflagkey)
if [ -z "\$out" ] || [ ! -x "\$bin" ]; then
	echo "go stand-in: no prebuilt binary for \$src with flags '\$flags'" >&2
	exit 1
fi
cp "\$bin" "\$out"
GO
chmod +x "$img$goroot/bin/go"

cat >"$img/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin TMPDIR=/tmp HOME=/tmp TICKPROF_REQUIRE_BPF=1 TICKPROF_TESTBIN=/testbin TICKPROF_IN_MATRIX=1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
# No tracefs nor debugfs, as on a machine fresh from boot: tickprof mounts
# tracefs itself where it needs it.
mount -t bpf bpf /sys/fs/bpf
ulimit -l unlimited
echo "MATRIX-KERNEL $(uname -r) clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource) booted in $(cut -d' ' -f1 /proc/uptime)s"
tickprof doctor || echo "MATRIX-FAIL doctor"
fail=0
while IFS="$(printf '\037')" read -r name run skip; do
	echo "MATRIX-RUN $name run=${run:-all} skip=${skip:-none}"
	ok=1
	(cd /t/$name && ./test -test.v -test.count=1 -test.timeout=30m -test.run "${run:-.}" -test.skip "${skip:-^$}") || ok=0
	if [ $ok = 1 ]; then echo "MATRIX-PASS $name"; else echo "MATRIX-FAIL $name"; fail=1; fi
done </tests
echo "MATRIX-END clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
if [ $fail = 0 ]; then echo "MATRIX-RESULT PASS"; else echo "MATRIX-RESULT FAIL"; fi
sync
reboot -f
INIT
chmod +x "$img/init"
(cd "$img" && find . | cpio -o -H newc --quiet) >"$work/initrd.cpio"
echo "test-kernels: initramfs $(du -h "$work/initrd.cpio" | cut -f1)" >&2

# --- boot the kernels, in parallel (one emulated CPU each) ------------------
# One vCPU per guest: with several, QEMU's multi-threaded TCG can livelock a
# guest CPU on a jump label that another CPU is patching (seen on 6.1 when
# the raw_syscalls tracepoint is enabled), which is an emulator artefact.

# The kernel command line. no_timer_check: under TCG on a loaded host the
# guest's check that the timer interrupt works (a few ticks within a busy
# wait timed by the TSC, which runs on the host's clock) fails when qemu
# is descheduled, and when the fallbacks fail too the kernel panics ("IO-APIC
# + timer doesn't work!"); the emulated timer does work.
cmdline="console=ttyS0 quiet panic=-1 rdinit=/init no_timer_check ${TICKPROF_KERNEL_APPEND:-}"
clk_tck=$(getconf CLK_TCK)

# cpu_secs PID: the CPU seconds (user + system) PID has used; nothing once
# it has exited.
cpu_secs() {
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	# Fields after the command name: the state first, utime and stime the
	# 12th and 13th.
	echo "${st##*) }" | awk -v hz="$clk_tck" '$1 != "Z" { print int(($12 + $13) / hz) }'
}

# watch_guest PID LOG: wait for the guest PID, which writes LOG, stopping it
# when it has used its CPU budget, printed nothing for the silence limit or
# run for the wall-clock limit. Sets cpu (the CPU seconds it used), quiet
# (its longest silence, in seconds) and stop (why it was stopped, "" when it
# ended by itself).
watch_guest() {
	local pid=$1 log=$2 start=$SECONDS c q
	cpu=0 quiet=0 stop=""
	while c=$(cpu_secs "$pid") && [ -n "$c" ]; do
		cpu=$c
		q=$(($(date +%s) - $(stat -c %Y "$log")))
		[ "$q" -gt "$quiet" ] && quiet=$q
		if [ "$cpu" -ge "$guest_cpu" ]; then
			stop="TIMEOUT(cpu>${guest_cpu}s)"
		elif [ "$q" -ge "$guest_silence" ]; then
			stop="HUNG(silent>${guest_silence}s)"
		elif [ $((SECONDS - start)) -ge "$guest_wall" ]; then
			stop="TIMEOUT(wall>${guest_wall}s)"
		fi
		if [ -n "$stop" ]; then
			kill -TERM "$pid" 2>/dev/null || true
			sleep 5
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 2
	done
	wait "$pid" 2>/dev/null || true
}

# boot PKG VMLINUZ: run the tests in a guest; writes $work/PKG.result
# (result, wall seconds, CPU seconds, guest boot seconds, longest silence).
boot() {
	local p=$1 vmlinuz=$2 log=$work/$1.log kimg=$work/$1.root start pid stop cpu quiet result booted
	# The kernel's config goes in a second cpio archive appended to the
	# shared one (the kernel unpacks concatenated archives), so tests and
	# doctor can compare what they find with what the kernel was built with.
	mkdir -p "$kimg/boot"
	cp "$(dirname "$vmlinuz")"/config-* "$kimg/boot/"
	(cd "$kimg" && find . | cpio -o -H newc --quiet) | cat "$work/initrd.cpio" - >"$work/$p.cpio"
	start=$(date +%s)
	qemu-system-x86_64 \
		-machine q35,accel=tcg -cpu max -smp "$smp" -m 1G \
		-nographic -no-reboot -nic none \
		-kernel "$vmlinuz" -initrd "$work/$p.cpio" -append "$cmdline" \
		</dev/null >"$log.raw" 2>&1 &
	pid=$!
	watch_guest "$pid" "$log.raw"
	tr -d '\r' <"$log.raw" >"$log"
	rm -f "$work/$p.cpio" "$log.raw"
	if [ -n "$stop" ]; then
		result=$stop
	elif grep -q '^MATRIX-RESULT PASS' "$log" && ! grep -q '^MATRIX-FAIL' "$log"; then
		result=PASS
	else
		result=FAIL
	fi
	booted=$(sed -n 's/.*MATRIX-KERNEL .* booted in \([0-9.]*\)s$/\1/p' "$log" | head -1)
	echo "$result $(($(date +%s) - start)) $cpu ${booted:--} $quiet" >"$work/$p.result"
}

pids=() names=()
for k in $kernels; do
	p=$(resolve "$k")
	[ -n "$p" ] || die "cannot resolve $k: no apt metadata and nothing cached in $cache"
	vmlinuz=$(fetch "$p")
	echo "test-kernels: booting $p" >&2
	boot "$p" "$vmlinuz" &
	pids+=($!) names+=("$p")
done
for pid in "${pids[@]}"; do wait "$pid" || true; done

status=0
summary=""
for p in "${names[@]}"; do
	read -r result secs cpu booted quiet <"$work/$p.result" || { result=FAIL secs=0 cpu=0 booted=- quiet=0; }
	echo "=== $p: $result"
	grep -a -E '^(MATRIX-|--- (FAIL|SKIP)|    --- (FAIL|SKIP)|(FAIL|ok|PASS)\b|panic:|\s+\S+_test\.go:[0-9]+:)' "$work/$p.log" | sed "s/^/[$p] /" || true
	if [ "$result" != PASS ]; then
		status=1
		cp "$work/$p.log" "$cache/$p.last.log"
		echo "test-kernels: full log of $p in $cache/$p.last.log" >&2
	fi
	summary+="$(printf '%-36s %-20s %5ss wall %4ss CPU, booted in %ss, longest silence %ss' "$p" "$result" "$secs" "$cpu" "$booted" "$quiet")"$'\n'
done
echo "test-kernels summary (load average $(cut -d' ' -f1-3 /proc/loadavg)):"
printf '%s' "$summary"
exit $status
