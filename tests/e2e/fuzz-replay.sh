# fuzz-replay.sh - replays the seed corpus of every reader through its libFuzzer
# harness (clang, ASan+UBSan; built by tests/fuzz/fuzz.mk): any crash, leak,
# sanitizer report or broken reader contract fails the test.
source "$TESTLIB"

dir=$HEAPSNAP_BUILD/fuzz
corpus=$SRCDIR/tests/fuzz/corpus
for n in pprof jeprof gperf sniff; do
	[ -x "$dir/fuzz_$n" ] || skip "fuzz harness fuzz_$n not built (needs clang with libFuzzer)"
done

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for n in pprof jeprof gperf sniff; do
	# Every harness gets every file: a reader must also reject the others'
	# formats cleanly.  The sniffing harness is the one that must parse them.
	files=("$corpus"/*/*)
	[ ${#files[@]} -gt 0 ] || fail "empty corpus in $corpus"
	note "fuzz_$n: replaying ${#files[@]} inputs"
	timeout 300 "$dir/fuzz_$n" -timeout=20 -rss_limit_mb=2048 "${files[@]}" >fuzz_$n.log 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		# The input, the report's first line and the top of its stack.
		grep -E '^Running: ' fuzz_$n.log | tail -n 1 >&2
		grep -m 1 -E 'ERROR|runtime error|fuzz check failed|cannot read back' fuzz_$n.log >&2
		grep -m 8 -E '^ +#[0-9]+ ' fuzz_$n.log >&2
		fail "fuzz_$n crashed or failed (exit $rc) replaying the corpus"
	fi
	ran=$(grep -c '^Executed ' fuzz_$n.log)
	[ "$ran" -eq ${#files[@]} ] || fail "fuzz_$n ran $ran of ${#files[@]} inputs"
done
echo "replayed $(ls "$corpus"/*/* | wc -l) inputs through 4 harnesses"
