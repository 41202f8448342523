#!/bin/bash
# pprof-gotool.sh - heapsnap's pprof files read by `go tool pprof`, and Go's
# own heap profiles (written by a real Go program) read by heapsnap.
. "$TESTLIB"
need_cmd go gunzip
MK=$HEAPSNAP_BUILD/tests/lib/mkprofile
[ -x "$MK" ] || skip "mkprofile not built ($MK)"

export HOME=$PWD PPROF_TMPDIR=$PWD GOCACHE=$PWD/gocache GOPATH=$PWD/gopath
export GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local
gopprof() { timeout 60 go tool pprof -symbolize=none "$@" 2>&1; }

# --- heapsnap writes, go tool pprof reads ----------------------------------
"$MK" write prof.pb.gz || fail "mkprofile write"
# type, total (-unit=B also suffixes counts with B), top function
for t in inuse_space:3555328:alloc_site_b alloc_space:3964928:alloc_site_b \
	 inuse_objects:103:alloc_site_a alloc_objects:203:alloc_site_a; do
	IFS=: read -r type total top <<<"$t"
	out=$(gopprof -top -unit=B -sample_index=$type prof.pb.gz)
	expect_match "$out" "Type: $type" "go pprof type"
	expect_match "$out" "of ${total}B total" "go pprof $type total"
	first=$(printf '%s\n' "$out" | grep -A1 'flat  flat%' | tail -n 1)
	expect_match "$first" " $top\$" "top function for $type"
done
out=$(gopprof -top -unit=B prof.pb.gz)
expect_match "$out" "Type: inuse_space" "default sample type"
expect_match "$out" "409600B +11\.5[0-9]% .* 409600B .* alloc_site_a$" "alloc_site_a row"
expect_match "$out" " 0 +0% .* 409600B .* make_table$" "make_table cum"
raw=$(gopprof -raw prof.pb.gz)
expect_match "$raw" "alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes\[dflt\]" "sample types"
expect_match "$raw" "200 +819200 +100 +409600: 1 2 3" "raw sample values"
expect_match "$raw" "bytes:\[4096 bytes\]" "bytes label"
expect_match "$raw" "PeriodType: space bytes" "period type"
expect_match "$raw" "00112233445566778899aabbccddeeff00112233 \[FN\]\[FL\]\[LN\]\[IN\]" "mapping build id and flags"
expect_match "$raw" "0x403000 M=1 alloc_site_a mkprofile-prog.c:30" "location line"

# Not gzipped: both read it.
gunzip -c prof.pb.gz > raw.pb
out=$(gopprof -top -unit=B raw.pb)
expect_match "$out" "of 3555328B total" "go pprof on raw protobuf"
"$MK" dump raw.pb > raw.txt || fail "heapsnap cannot read raw protobuf"
"$MK" dump prof.pb.gz > ours.txt || fail "heapsnap cannot read its own file"
cmp -s raw.txt ours.txt || fail "raw and gzipped dumps differ: $(diff raw.txt ours.txt)"

# Negative values (a diff) survive Go's reader.
"$MK" write diff.pb.gz --diff || fail "mkprofile write --diff"
# (Go's "total" sums absolute values: 3555328 + 2560; main's cum is the net.)
out=$(gopprof -top -unit=B diff.pb.gz)
expect_match "$out" "of 3557888B total" "diff total"
expect_match "$out" " 3552768B +99\.86% +main$" "diff net cum"
expect_match "$(gopprof -raw diff.pb.gz)" " -7 +-3584 +-5 +-2560: 5 3 *$" "negative values"

# --- Go re-encodes our file: heapsnap reads Go's writer ---------------------
gopprof -proto prof.pb.gz > go.pb.gz || fail "go tool pprof -proto"
"$MK" dump go.pb.gz > go.txt || fail "heapsnap cannot read go's re-encoding: $(cat go.txt)"
cmp -s go.txt ours.txt || fail "go's re-encoding reads differently: $(diff ours.txt go.txt)"

# --- a real Go program's heap profile and cpu profile ------------------------
cat > leak.go <<'EOF'
package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

var keep [][]byte
var sink int

//go:noinline
func leakA() {
	for i := 0; i < 100; i++ {
		keep = append(keep, make([]byte, 4096))
	}
}

//go:noinline
func leakB() {
	for i := 0; i < 3; i++ {
		keep = append(keep, make([]byte, 1<<20))
	}
}

func main() {
	runtime.MemProfileRate = 1
	leakA()
	leakB()
	runtime.GC()
	f, _ := os.Create(os.Args[1])
	pprof.Lookup("heap").WriteTo(f, 0)
	f.Close()
	c, _ := os.Create(os.Args[2])
	pprof.StartCPUProfile(c)
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		sink++
	}
	pprof.StopCPUProfile()
	c.Close()
}
EOF
timeout 120 go run leak.go goheap.pb.gz gocpu.pb.gz >go-run.log 2>&1 || fail "go run: $(cat go-run.log)"
"$MK" dump goheap.pb.gz > goheap.txt || fail "heapsnap cannot read a Go heap profile: $(cat goheap.txt)"
expect_match "$(cat goheap.txt)" "^sample 100 409600 100 409600 runtime\.main;main\.main;main\.leakA$" "Go heap: leakA"
expect_match "$(cat goheap.txt)" "^sample 3 3145728 3 3145728 runtime\.main;main\.main;main\.leakB$" "Go heap: leakB"
expect_match "$(cat goheap.txt)" "^has_alloc 1$" "Go heap: alloc types"
# Converted by heapsnap, Go still reads it the same; a second pass is byte-identical.
"$MK" convert goheap.pb.gz conv1.pb.gz || fail "convert Go heap profile"
"$MK" convert conv1.pb.gz conv2.pb.gz || fail "convert again"
cmp -s conv1.pb.gz conv2.pb.gz || fail "write->read->write changed the bytes"
a=$(gopprof -top -unit=B goheap.pb.gz | grep -E 'total|main\.leak')
b=$(gopprof -top -unit=B conv1.pb.gz | grep -E 'total|main\.leak')
expect_eq "$b" "$a" "go pprof -top of Go's file and of heapsnap's conversion"

out=$("$MK" dump gocpu.pb.gz 2>&1) && fail "a cpu profile was accepted"
expect_match "$out" "cannot read 'gocpu.pb.gz': not a heap profile \(sample types: samples/count, cpu/nanoseconds\)$" "cpu profile refused"

# Truncated and corrupt files: one line of error, no crash.
head -c 100 prof.pb.gz > trunc.pb.gz
out=$("$MK" dump trunc.pb.gz 2>&1); rc=$?
expect_eq "$rc" 1 "truncated file exit status"
expect_match "$out" "^mkprofile: cannot read 'trunc.pb.gz': truncated gzip stream at byte 100$" "truncated message"
echo ok
