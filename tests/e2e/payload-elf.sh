# payload-elf.sh - the payload library's shape: only hsp_* exported, libc only, no STB_GNU_UNIQUE, tiny static TLS.
source "$TESTLIB"
[ -r "$HEAPSNAP_PAYLOAD" ] || skip "payload not built"
need_cmd readelf

syms=$(readelf -W --dyn-syms "$HEAPSNAP_PAYLOAD" | awk '$5 != "LOCAL" && $7 != "UND" && $8 != "" && NR > 3 {print $8}' | sort -u)
for s in $syms; do
	case $s in
	hsp_*) ;;
	*) fail "exported symbol '$s' (only hsp_* may be)" ;;
	esac
done
for s in hsp_start hsp_prepare_unload hsp_status hsp_stop; do
	printf '%s\n' "$syms" | grep -qx "$s" || fail "$s is not exported"
done

needed=$(readelf -d "$HEAPSNAP_PAYLOAD" | awk '/NEEDED/ {print $NF}' | tr -d '[]' | sort | tr '\n' ' ')
expect_eq "$needed" "libc.so.6 " "NEEDED libraries"

readelf -W --dyn-syms --syms "$HEAPSNAP_PAYLOAD" | grep -q UNIQUE && fail "STB_GNU_UNIQUE symbol (dlclose would be a no-op)"

# Static TLS from a dlopen comes from glibc's small surplus: keep it to a few words.
tls=$(readelf -lW "$HEAPSNAP_PAYLOAD" | awk '$1 == "TLS" {print $6}')
[ -n "$tls" ] || fail "no TLS segment"
tls=$((tls))
[ "$tls" -le 64 ] || fail "TLS segment of $tls bytes (keep it under 64)"

# It never imports the allocator it hooks.
readelf -W --dyn-syms "$HEAPSNAP_PAYLOAD" | awk '$7 == "UND" {print $8}' |
	grep -E '^(malloc|calloc|realloc|free|_Zn|_Zd)(@|$)' && fail "the payload imports an allocator entry point"
true
