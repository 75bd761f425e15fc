#!/bin/sh
# A document store in one shell line each way: save with `echo > file` (in place, no
# temporary file, no fsync); load with `cat`. A crash between the truncation and the
# write leaves an empty file, which load prints as nothing: not a saved value (A1).
#
#   sh examples/exec/echo_store.sh save DIR VALUE_FILE
#   sh examples/exec/echo_store.sh load DIR
case "$1" in
  save) read -r v < "$3"; echo "$v" > "$2/v.json" ;;
  load) if [ -e "$2/v.json" ]; then cat "$2/v.json"; else echo null; fi ;;
  *) echo "usage: echo_store.sh save DIR VALUE_FILE | load DIR" >&2; exit 2 ;;
esac
