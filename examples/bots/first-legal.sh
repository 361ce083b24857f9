#!/bin/sh
# A minimal external bot for `punct-referee tournament` (docs/BOTS.md): it
# always plays the first legal move it is offered.
move=""
while read -r word rest; do
  case "$word" in
    legal) set -- $rest; move="$1" ;;
    go) echo "$move" ;;
    result) exit 0 ;;
  esac
done
