#!/usr/bin/env bash
# plan-size.sh [-a] [PLAN]: how long a plan is, by resource type: the
# resources of each type, the lines of their blocks in the plan's text and
# the lines per resource; with -a, also the lines of each attribute by type,
# longest first, and how many lines are placeholders ("(known after apply)",
# "(sensitive, write-only attribute)"). PLAN is the text `terraform plan
# -no-color` printed (or `terraform show -no-color` of a saved plan), or a
# saved plan (terraform plan -out=FILE), which it shows with $TERRAFORM
# (default: terraform) in the current directory, where the configuration was
# initialised; without PLAN, the text on stdin. Colours are ignored.
#   terraform plan -no-color | scripts/plan-size.sh
#   terraform plan -out=tfplan && scripts/plan-size.sh -a tfplan
# A resource's block runs from its "# ADDRESS will be created" line to its
# closing brace (a block of "Objects have changed outside of Terraform"
# counts with its type too); the legend, warnings, outputs and the summary
# are outside every block, and counted on a line of their own.
set -euo pipefail

attributes=0
if [ "${1:-}" = "-a" ]; then attributes=1; shift; fi
if [ $# -gt 1 ] || [[ "${1:-}" == -?* ]]; then
  sed -n '2,/^set -/{/^set -/d;s/^# \{0,1\}//;p;}' "$0" >&2
  exit 2
fi

text() {
  if [ $# -eq 0 ] || [ "$1" = "-" ]; then
    cat
  elif [ "$(head -c 2 "$1")" = "PK" ]; then # a saved plan is a zip archive
    "${TERRAFORM:-terraform}" show -no-color "$1"
  else
    cat "$1"
  fi
}

text "$@" | awk -v attributes="$attributes" '
# The resource type of an address: module paths and instance keys dropped,
# a data source as data.TYPE.
function type_of(address,    n, i, part) {
  gsub(/\[[^]]*\]/, "", address)
  n = split(address, part, ".")
  for (i = 1; i < n && part[i] == "module"; i += 2) {}
  return part[i] == "data" ? "data." part[i + 1] : part[i]
}
function add(name, lines) {
  if (!((type, name) in attr_lines)) { names[type, ++nnames[type]] = name }
  attr_lines[type, name] += lines
  in_attributes[type] += lines
}
function close_attribute() {
  if (attribute != "") { add(attribute, NR - attribute_start) }
  attribute = ""
}
function row(label, count, lines, per) {
  printf "%-36s %9s %7d %14s\n", label, count, lines, per
}
{ gsub(/\033\[[0-9;]*m/, ""); total++ }
/^  # [^(]/ {   # a block begins: "  # ADDRESS will be created"
  close_attribute()
  type = type_of($2)
  if (!(type in resources)) { types[++ntypes] = type }
  resources[type]++
  in_block = 1
}
in_block { lines[type]++ }
in_block && /\(known after apply\)/ { unknown++ }
in_block && /write-only attribute\)/ { write_only++ }   # OpenTofu: "(write-only attribute)"
# A top-level attribute: six spaces, the action (a space when unchanged),
# the name; it runs to the next one or to the closing brace.
in_block && /^      ([-+~ ]|-\/\+|\+\/-) "?[A-Za-z0-9_-]+"?( +=| *\{)/ {
  close_attribute()
  attribute = substr($0, 7)
  sub(/^([-+~ ]|-\/\+|\+\/-) /, "", attribute)
  sub(/[ ={].*/, "", attribute)
  gsub(/"/, "", attribute)
  attribute_start = NR
}
in_block && /^        # \([0-9]+ unchanged [a-z]+ hidden\)$/ { close_attribute(); add("(unchanged, hidden)", 1) }
in_block && /^    }$/ { close_attribute(); in_block = 0 }   # the block ends
END {
  close_attribute()
  printf "%-36s %9s %7s %14s\n", "resource type", "resources", "lines", "lines/resource"
  for (i = 1; i <= ntypes; i++) {
    t = types[i]
    row(t, resources[t], lines[t], sprintf("%.1f", lines[t] / resources[t]))
    all_resources += resources[t]; all_lines += lines[t]
  }
  row("all resources", all_resources, all_lines, all_resources ? sprintf("%.1f", all_lines / all_resources) : "-")
  row("outside resource blocks", "-", total - all_lines, "-")
  row("whole plan", "-", total, "-")
  if (!attributes) { exit }
  printf "\n%-36s %-36s %7s %14s\n", "resource type", "attribute", "lines", "lines/resource"
  for (i = 1; i <= ntypes; i++) {
    t = types[i]; n = nnames[t]
    for (a = 1; a <= n; a++) { pick[a] = names[t, a] }
    pick[++n] = "(address, braces)"
    attr_lines[t, pick[n]] = lines[t] - in_attributes[t]
    # Longest first (a selection sort: awk has no portable sort).
    for (a = 1; a <= n; a++) {
      best = a
      for (b = a + 1; b <= n; b++) { if (attr_lines[t, pick[b]] > attr_lines[t, pick[best]]) { best = b } }
      name = pick[best]; pick[best] = pick[a]; pick[a] = name
      printf "%-36s %-36s %7d %14.1f\n", t, name, attr_lines[t, name], attr_lines[t, name] / resources[t]
    }
  }
  printf "\nplaceholders in resource blocks: %d lines \"(known after apply)\", %d lines \"(sensitive, write-only attribute)\"\n", unknown, write_only
}'
