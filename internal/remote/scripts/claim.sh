claim_record() {
  [ -n "$claim" ] && [ "$held" != "$claim" ] || return 0
  if [ ! -e "$rec" ] && [ ! -L "$rec" ]; then
    mkdir -m 0700 rec || exit $EXIT_RECORD
    made=$newdirs
    if [ "$existed" = 1 ]; then
      ln -- "$target" rec/original 2>/dev/null || cp -p -- "$target" rec/original || exit $EXIT_RECORD
    fi
    printf 'claim=%s\nnote=%s\nexisted=%s\n%s' "$claim" "$note" "$existed" "$made" >rec/record || exit $EXIT_RECORD
    mv -T -- rec "$rec" || { echo "$rec appeared while kha made it; nothing was changed" >&2; exit $EXIT_RECORD; }
    fresh=1
    return 0
  fi
  into_record
  if [ -f record ]; then ln -- record "$fds/6/held-record" || exit $EXIT_RECORD; fi
  printf 'claim=%s\nnote=%s\nexisted=%s\n%s' "$claim" "$note" "$existed" "$made" >record.new &&
    mv -fT -- record.new record || { back_to_work; unclaim; exit "$EXIT_RECORD"; }
  back_to_work
}
unclaim() {
  if [ "$fresh" = 1 ]; then
    rm -rf -- "$rec"
  elif [ -e held-record ]; then
    (into_record && mv -fT -- "$fds/6/held-record" record)
  fi
}
