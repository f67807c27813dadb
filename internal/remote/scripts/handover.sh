dir=${target%/*} base=${target##*/}
[ -n "$dir" ] || dir=/
rec=$dir/.$base.kha
if [ "$op" != write ]; then
  [ -e "$rec" ] || [ -L "$rec" ] || exit $EXIT_OK
  if not_kha_dir "$rec"; then
    [ "$op" = read ] || exit $EXIT_OK
    echo "$rec is not a directory that $(id -un) owns (it is $(owner_of "$rec")'s): kha did not make it" >&2
    exit $EXIT_FOREIGN
  fi
fi
case $op in
read)
  into_record
  [ -e handover ] || [ -L handover ] || exit $EXIT_OK
  if [ -L handover ] || [ ! -f handover ] || [ ! -O handover ]; then
    echo "$rec/handover is not a file that $(id -un) owns (it is $(owner_of handover)'s): kha did not write it" >&2
    exit $EXIT_FOREIGN
  fi
  exec head -c "$size" handover ;;
write)
  safe_dir
  [ -e "$rec" ] || [ -L "$rec" ] || mkdir -m 0700 -- "$rec" || exit $EXIT_RECORD
  into_record
  umask 077
  rm -f handover.new && head -c "$size" >handover.new && mv -fT -- handover.new handover || exit $EXIT_RECORD ;;
remove)
  into_record
  rm -f handover || exit $EXIT_REMOVE
  set -- .[!.]* ..?* *
  for f; do [ -e "$f" ] || [ -L "$f" ] && exit $EXIT_OK; done
  cd / && rmdir -- "$rec" 2>/dev/null
  exit $EXIT_OK ;;
esac
