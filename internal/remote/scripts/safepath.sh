# safe_path DIR says whether kha, which acts as root, may work in DIR:
# whether no other local user can change what a path through it leads to.
# As OpenSSH's StrictModes judges a key's path, every directory from / to
# DIR must be owned by root or the connection user and writable by no one
# else: not through the mode's bits, nor a group other than an accepted
# one (own_group), nor an ACL entry. A sticky directory (/tmp) passes
# when what the path takes from it is root's or the connection user's: no
# one else can rename or remove that. A link is followed, hop by hop,
# only from a directory that passed, and what it leads to is judged
# anew. Without a verdict it returns 0; with one it sets $unsafe_at (the
# directory or link) and $unsafe_why (the reason and the fix) and returns 1.
#
# One stat(1) reads every directory on the way; only a link (readlink and
# a stat of where it leads) or a group-writable directory (its ACL) costs
# more. A missing directory ends the walk: what is made below the last
# one that exists is made by kha, in a directory that passed.
nl='
'
stat_seen=$nl # "path\nattributes\n" for each path stat(1) was asked about
safe_path() {
  sp_path=$1 sp_hops=0 unsafe_at='' unsafe_why=''
  while :; do
    prefixes_of "$sp_path"
    sp_path=${sp_prefixes##*"$nl"}
    sp_ifs=$IFS IFS=$nl sp_noglob=$-
    set -f
    # shellcheck disable=SC2086 # a prefix a line
    set -- $sp_prefixes
    IFS=$sp_ifs
    case $sp_noglob in *f*) ;; *) set +f ;; esac
    stat_paths "$@"
    sp_open=0 # the directory that holds the next entry lets others write, but is sticky
    for sp_at; do
      seen_of "$sp_at"
      [ "$sp_seen" != missing ] || return 0
      sp_mode=$((0x${sp_seen%% *})) sp_uid=${sp_seen#* }
      sp_uid=${sp_uid%% *} sp_gid=${sp_seen#* * } sp_gid=${sp_gid%% *}
      if [ "$sp_open" = 1 ] && [ "$sp_uid" != 0 ] && [ "$sp_uid" != "$conn_uid" ]; then
        unsafe "$sp_at" "it is $(user_name "$sp_uid")'s, in a directory others can write to: its owner can remove or replace it. Use a path through directories of root's"
        return 1
      fi
      case $((sp_mode & 61440)) in
      40960) # a link: what it names is walked anew, with the rest of the path
        sp_hops=$((sp_hops + 1))
        [ "$sp_hops" -le 40 ] || { unsafe "$sp_at" "the path goes through more than 40 links. Point the path at the file itself"; return 1; }
        sp_link=$(readlink -- "$sp_at") || { unsafe "$sp_at" "readlink could not read the link"; return 1; }
        case $sp_link in
        '' | *"$nl"*) unsafe "$sp_at" "the link names no path kha can follow. Point the path at the file itself"; return 1 ;;
        /*) ;;
        *) sp_link=${sp_at%/*}/$sp_link ;;
        esac
        sp_path=$sp_link${sp_path#"$sp_at"}
        continue 2 ;;
      16384) ;;
      *) unsafe "$sp_at" "it is not a directory. Point the path at a file in a directory"; return 1 ;;
      esac
      sp_open=0
      if [ "$sp_uid" != 0 ] && [ "$sp_uid" != "$conn_uid" ]; then
        unsafe "$sp_at" "it is owned by $(user_name "$sp_uid"), who can rename anything in it"
        return 1
      elif [ $((sp_mode & 512)) != 0 ]; then # sticky: others may add entries, not touch the ones they do not own
        [ $((sp_mode & 18)) = 0 ] || sp_open=1
      elif [ $((sp_mode & 2)) != 0 ]; then
        unsafe "$sp_at" "every local user can write to it (mode $(printf %o $((sp_mode & 4095)))) and it has no sticky bit"
        return 1
      elif [ $((sp_mode & 16)) != 0 ] && ! group_cannot_write; then
        return 1
      fi
    done
    return 0
  done
}
# prefixes_of sets $sp_prefixes to the prefixes of the path it is given,
# / first, a line each: the last is the path without empty components.
prefixes_of() {
  sp_rest=${1#/} sp_prefix='' sp_prefixes=/
  while [ -n "$sp_rest" ]; do
    sp_part=${sp_rest%%/*}
    case $sp_rest in */*) sp_rest=${sp_rest#*/} ;; *) sp_rest='' ;; esac
    [ -z "$sp_part" ] || { sp_prefix=$sp_prefix/$sp_part; sp_prefixes=$sp_prefixes$nl$sp_prefix; }
  done
}
# stat_paths asks stat(1) about the paths it was not asked about before,
# all in one process.
stat_paths() {
  sp_ask=0
  for sp_at; do
    case $stat_seen in *"$nl$sp_at$nl"*) ;; *) sp_ask=1; break ;; esac
  done
  [ "$sp_ask" = 1 ] || return 0
  stat_seen=$stat_seen$(stat -c "%n$nl%f %u %g %a %U %G" -- "$@" 2>/dev/null)$nl
  for sp_at; do
    case $stat_seen in *"$nl$sp_at$nl"*) ;; *) stat_seen=$stat_seen$sp_at${nl}missing$nl ;; esac
  done
}
# seen_of sets $sp_seen to what stat(1) said of the path it is given:
# "mode uid gid permissions owner group" (the mode in hex, the permission
# bits in octal), or missing.
seen_of() {
  sp_seen=${stat_seen#*"$nl$1$nl"}
  sp_seen=${sp_seen%%"$nl"*}
}
# group_cannot_write judges a directory whose group bits let a group write
# ($sp_at, $sp_gid): with an ACL those bits are its mask, and its entries
# say who writes; without one, the owning group does.
group_cannot_write() {
  if command -v getfacl >/dev/null; then
    sp_acl=$(getfacl -cnpsE -- "$sp_at" 2>/dev/null) || { unsafe "$sp_at" "getfacl could not read its ACL"; return 1; }
  else
    case $(ls -ld -- "$sp_at") in
    ??????????+*) unsafe "$sp_at" "it has an ACL (ls -l shows +) and the host has no getfacl to read it: install acl, or remove the ACL (setfacl -b)"; return 1 ;;
    esac
    sp_acl=
  fi
  [ -n "$sp_acl" ] || sp_acl=group::w sp_via=
  [ "$sp_acl" = group::w ] || sp_via=", through its ACL"
  sp_ifs=$IFS IFS=$nl
  for sp_entry in $sp_acl; do
    IFS=$sp_ifs
    case $sp_entry in default:* | mask:* | other:* | user::*) continue ;; esac
    case ${sp_entry##*:} in *w*) ;; *) continue ;; esac
    sp_id=${sp_entry#*:} sp_id=${sp_id%:*}
    case $sp_entry in
    user:*) [ "$sp_id" = 0 ] || [ "$sp_id" = "$conn_uid" ] || {
        unsafe "$sp_at" "its ACL lets $(user_name "$sp_id") write to it. Remove the entry (setfacl -x u:$sp_id)"
        return 1
      } ;;
    group:*)
      [ -n "$sp_id" ] || sp_id=$sp_gid
      own_group "$sp_id" || {
        unsafe "$sp_at" "the members of group $(group_name "$sp_id") can write to it (mode $(printf %o $((sp_mode & 4095)))$sp_via) and it has no sticky bit"
        return 1
      } ;;
    esac
  done
  IFS=$sp_ifs
}
# own_group says whether the group it is given may write where kha works:
# root's group when kha connects as root, or the connection user's own
# group when that user is its only member.
own_group() {
  if [ "$1" = 0 ] || [ "$conn_uid" = 0 ]; then
    [ "$1" = 0 ] && [ "$conn_uid" = 0 ]
    return
  fi
  sp_member=
  while IFS=: read -r pw_name _ pw_uid pw_gid _; do
    [ "$pw_gid" = "$1" ] || continue
    [ "$pw_uid" = "$conn_uid" ] || return 1
    sp_member=$pw_name
  done </etc/passwd
  [ -n "$sp_member" ] || return 1
  while IFS=: read -r _ _ gr_gid gr_members; do
    [ "$gr_gid" != "$1" ] || [ -z "$gr_members" ] || [ "$gr_members" = "$sp_member" ] || return 1
  done </etc/group
}
# not_kha_dir says whether what is at the path it is given is not a
# directory kha made there: a link, not a directory, or another user's.
not_kha_dir() {
  [ -L "$1" ] || [ ! -d "$1" ] || [ ! -O "$1" ]
}
unsafe() {
  unsafe_at=$1 unsafe_why=$2
}
user_name() {
  while IFS=: read -r pw_name _ pw_uid _; do
    [ "$pw_uid" != "$1" ] || { echo "$pw_name"; return; }
  done </etc/passwd
  echo "user $1"
}
group_name() {
  while IFS=: read -r gr_name _ gr_gid _; do
    [ "$gr_gid" != "$1" ] || { echo "$gr_name"; return; }
  done </etc/group
  echo "group $1"
}
# safe_dir refuses to go on unless the directory it is given (the
# target's, $dir, by default) is safe; the second argument says what kha
# was to do there.
safe_dir() {
  set -- "${1-$dir}" "${2-manage $target}"
  safe_path "$1" && return 0
  echo "refusing to $2: another local user could change where a path through $1 leads: $unsafe_at is not safe: $unsafe_why. Make every directory from / to $1 root's (or the connection user's) and writable by no one else (chown root; chmod go-w; setfacl -b), or, for a directory everyone writes to, set its sticky bit (chmod +t) as /tmp has; or use a file in another directory" >&2
  exit "$EXIT_UNSAFE_DIR"
}
