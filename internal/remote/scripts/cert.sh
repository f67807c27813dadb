dir=${target%/*} base=${target##*/}
[ -n "$dir" ] || dir=/
if [ ! -f "$ca_cert" ] || [ ! -f "$ca_key" ]; then
  echo "the CA's certificate $ca_cert or key $ca_key is not on the host" >&2
  exit $EXIT_CA
fi
command -v openssl >/dev/null || { echo "openssl is not installed on the host" >&2; exit $EXIT_ISSUE; }
safe_dir
safe_dir "${ca_cert%/*}" "use the CA's certificate $ca_cert"
safe_dir "${ca_key%/*}" "use the CA's key $ca_key"
for t in "$target" "$key"; do regular_target "$t"; done
case $alg in
  RSA-2048|RSA-3072|RSA-4096) set -- -algorithm RSA -pkeyopt "rsa_keygen_bits:${alg#RSA-}" ;;
  ECDSA-P256) set -- -algorithm EC -pkeyopt ec_paramgen_curve:P-256 ;;
  ECDSA-P384) set -- -algorithm EC -pkeyopt ec_paramgen_curve:P-384 ;;
  *) echo "unknown key algorithm $alg" >&2; exit $EXIT_ISSUE ;;
esac
sweep
enter
umask 077
printf '%s' "$ext" >ext
if ! openssl x509 -in "$ca_cert" -noout -pubkey >ca.pub 2>/dev/null || ! openssl pkey -in "$ca_key" -pubout >key.pub 2>/dev/null ||
  ! cmp -s ca.pub key.pub; then
  echo "$ca_key is not the key of $ca_cert: they are not one CA's" >&2
  exit $EXIT_CA
fi
issue() { "$@" >log 2>&1 || { while IFS= read -r line; do printf '%s\n' "$line"; done <log >&2; exit $EXIT_ISSUE; }; }
issue openssl genpkey "$@" -out key.new
issue openssl req -new -key key.new -subj "$subject" -out csr
issue openssl x509 -req -in csr -CA "$ca_cert" -CAkey "$ca_key" -set_serial "0x$serial" -days "$days" -sha256 \
  -extfile ext -extensions v3 -out crt.new
openssl verify -CAfile "$ca_cert" crt.new >/dev/null 2>&1 || {
  echo "a certificate signed with $ca_key does not verify against $ca_cert: they are not one CA's" >&2
  exit $EXIT_CA
}
if [ -e "$key" ]; then chmod --reference="$key" key.new && chown --reference="$key" key.new || exit $EXIT_OWNER_MODE; fi
if [ -e "$target" ]; then
  chmod --reference="$target" crt.new && chown --reference="$target" crt.new || exit $EXIT_OWNER_MODE
else
  chmod 0644 crt.new || exit $EXIT_OWNER_MODE
fi
while IFS= read -r line; do printf '%s\n' "$line"; done <crt.new
echo "$WORD_READY"
IFS= read -r answer && [ "$answer" = "$WORD_COMMIT" ] || exit $EXIT_NO_COMMIT
for f in "$target:previous.crt" "$key:previous.key"; do
  [ -e "${f%:*}" ] || continue
  ln -- "${f%:*}" "${f##*:}" 2>/dev/null || cp -p -- "${f%:*}" "${f##*:}" || exit $EXIT_BACKUP
done
put_back() {
  trap '' HUP INT TERM
  [ -z "$watchdog" ] || kill "$watchdog" 2>/dev/null
  for f in "$key:previous.key" "$target:previous.crt"; do
    if [ -e "${f##*:}" ]; then mv -fT -- "${f##*:}" "${f%:*}" || exit $EXIT_ROLLBACK; else rm -f -- "${f%:*}" || exit $EXIT_ROLLBACK; fi
  done
  if [ -n "$reload" ]; then
    echo "--- the previous certificate and key were put back; running the reload command again:" >&2
    run "$reload" || exit $EXIT_ROLLBACK
  fi
  exit "$1"
}
watchdog=
trap 'put_back $EXIT_VERIFY' HUP INT TERM
trap : PIPE
mv -fT -- key.new "$key" || put_back $EXIT_RENAME
mv -fT -- crt.new "$target" || put_back $EXIT_RENAME
rc=$EXIT_OK
if [ -n "$reload" ]; then run "$reload"; rc=$?; fi
[ $rc = $EXIT_OK ] || { [ $rc = $EXIT_TIMEOUT ] && put_back $EXIT_RELOAD_TIME; put_back $EXIT_RELOAD; }
(sleep "$confirm" && kill -TERM $$) </dev/null >/dev/null 2>&1 &
watchdog=$!
echo "$WORD_RELOADED" 2>/dev/null && IFS= read -r verdict && [ "$verdict" = "$WORD_KEEP" ] || put_back $EXIT_VERIFY
trap '' HUP INT TERM
kill "$watchdog" 2>/dev/null
# The previous pair goes to a directory made here and renamed into
# place: nothing is written through a name someone else could swap.
kept=$dir/.$base.kha.previous original=$dir/.$base.kha.original
ours() {
  [ -d "$1" ] && [ ! -L "$1" ] && [ -O "$1" ]
}
if ours "$kept" && [ ! -e "$original" ] && [ ! -L "$original" ]; then mv -T -- "$kept" "$original" || exit $EXIT_OK; fi
mkdir -m 0700 kept || exit $EXIT_OK
for f in "$base:previous.crt" "${key##*/}:previous.key"; do
  [ ! -e "${f##*:}" ] || mv -fT -- "${f##*:}" "kept/${f%:*}"
done
if ours "$kept"; then rm -rf -- "$kept"; fi
mv -T -- kept "$kept" 2>/dev/null
exit $EXIT_OK
