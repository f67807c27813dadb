#!/usr/bin/env bash
# bench-table.sh: run a go test -bench command of BenchmarkFleet,
# BenchmarkPlanScale and BenchmarkResourceCost, show its output on stderr
# and print its results as tables on stdout; exits with the command's status.
# Use: scripts/bench-table.sh go test -run '^$' -bench ... ./internal/provider
set -euo pipefail
"$@" 2>&1 | tee /dev/stderr | awk '
function metric(name) { return (name in m) ? m[name] : "-" }
function ratio(a, b) { return (b > 0) ? sprintf("%.2f", a / b) : "-" }
/^BenchmarkFleet\// {
  split($1, parts, "/"); res = parts[2]; hosts = parts[3]; sub(/^hosts=/, "", hosts); sub(/-[0-9]+$/, "", hosts)
  delete m
  for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i
  split("first noop change", phases, " ")
  for (p = 1; p <= 3; p++) {
    ph = phases[p]
    fleet[++rows] = sprintf("| %-18s | %5s | %-6s | %7.2f | %7.2f | %5s | %6.1f / %5.1f | %6.1f / %5.1f | %3.1f / %3.1f | %3.1f / %3.1f | %4.1f / %4.1f |",
      res, hosts, ph, metric(ph "-s"), metric("raw-" ph "-s"), ratio(metric(ph "-s"), metric("raw-" ph "-s")),
      metric(ph "-ctl-ms/host"), metric("raw-" ph "-ctl-ms/host"), metric(ph "-sshd-ms/host"), metric("raw-" ph "-sshd-ms/host"),
      metric(ph "-conns/host"), metric("raw-" ph "-conns/host"), metric(ph "-sessions/host"), metric("raw-" ph "-sessions/host"),
      metric(ph "-procs/host"), metric("raw-" ph "-procs/host"))
  }
}
/^Benchmark(PlanScale|ResourceCost)\// {
  name = $1; sub(/^Benchmark[A-Za-z]+\//, "", name); sub(/-[0-9]+$/, "", name)
  delete m
  for (i = 3; i < NF; i += 2) m[$(i + 1)] = $i
  scale[++srows] = sprintf("| %-34s | %6s | %7s | %7s | %8s | %6s | %7s | %5s / %5s / %5s |", name,
    metric("plan-s"), metric("plan-cpu-s"), metric("apply-s"), metric("apply-cpu-s"), metric("noop-s"), metric("noop-cpu-s"),
    metric("plan-cpu-ms/res"), metric("apply-cpu-ms/res"), metric("noop-cpu-ms/res"))
}
END {
  if (rows) {
    print "Fleet: each resource through the terraform CLI vs the raw x/crypto/ssh floor (per host: resource / floor)"
    print ""
    print "| resource           | hosts | phase  | CLI s   | floor s | ratio | controller ms   | sshd ms         | conns     | sessions  | processes   |"
    print "|--------------------|------:|--------|--------:|--------:|------:|----------------:|----------------:|----------:|----------:|------------:|"
    for (i = 1; i <= rows; i++) print fleet[i]
    print ""
  }
  if (srows) {
    print "Scale: through the terraform CLI (controller CPU: terraform and the provider; apply includes its plan; no-op: a plan with refresh after the apply)"
    print ""
    print "| configuration                      | plan s | plan CPU s | apply s | apply CPU s | no-op s | no-op CPU s | CPU ms per resource: plan / apply / no-op |"
    print "|------------------------------------|-------:|--------:|--------:|---------:|-------:|--------:|----------------------:|"
    for (i = 1; i <= srows; i++) print scale[i]
  }
}'
