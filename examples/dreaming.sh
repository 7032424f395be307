#!/bin/sh
# Four sessions of the `planner` agent (examples/gateway.toml) doing the same thing: a user asks
# when a meeting in one city falls in another; the agent reads the current time there, converts
# it, and notes the answer. Run from the repository's root, with `mcp-server-time` on PATH
# (see the README's "The tool gateway"); then `skillbase --config examples/gateway.toml dream
# --agent planner` learns the procedure.
set -eu
sb() { skillbase --config examples/gateway.toml "$@"; }
i=0
for trip in "Asia/Tokyo Europe/Paris 09:00 standup" "America/New_York Europe/London 14:30 review" \
            "Europe/Berlin Asia/Singapore 08:15 planning" "Australia/Sydney America/Chicago 17:45 retro"; do
  set -- $trip
  i=$((i + 1))
  s="dream-trip-$i"
  sb turn --agent planner --session "$s" -m "When is the $4 at $3 $1 time in $2? Convert the meeting time and note it" > /dev/null 2>&1
  sb call --agent planner --session "$s" time__get_current_time "{\"timezone\":\"$1\"}" > /dev/null 2>&1
  sb call --agent planner --session "$s" time__convert_time "{\"source_timezone\":\"$1\",\"time\":\"$3\",\"target_timezone\":\"$2\"}" > /dev/null 2>&1
  sb call --agent planner --session "$s" take_note "{\"text\":\"$4: $3 in $1\"}" > /dev/null 2>&1
done
echo "recorded $i sessions of agent planner"
