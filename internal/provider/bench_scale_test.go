package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// clusterWorkers is how many workers the 1,000-node configuration has
// beside its 3 control-plane nodes; each has three host resources.
const clusterWorkers = 997

// benchmarkCluster measures the cluster_1000_nodes fixture: one
// kha_cluster_endpoints and, per worker, a kha_haproxy_config, a
// kha_hosts_entries and a kha_kubeconfig_server. The workers' files are
// spread over the fleet's sshd hosts (KHA_BENCH_SCALE_HOSTS, default 100),
// each worker in a directory of its own with the kubelet.conf and hosts
// file a node has. render_only delivers only what has to be on a host
// (the kubeconfig edits); hosts delivers every resource.
func benchmarkCluster(b *testing.B, tf, bin string) {
	n := 100
	if s := os.Getenv("KHA_BENCH_SCALE_HOSTS"); s != "" {
		var ok bool
		if n, ok = positive(s); !ok {
			b.Fatalf("KHA_BENCH_SCALE_HOSTS: %q is not a number of hosts", s)
		}
	}
	for _, deliver := range []bool{false, true} {
		name := "cluster_1000_nodes/render_only"
		if deliver {
			name = fmt.Sprintf("cluster_1000_nodes/hosts=%d", n)
		}
		b.Run(name, func(b *testing.B) {
			testhost.RequireUnprivilegedUser(b)
			f := startFleet(b, n, fleetKind{}, fleetNetwork{})
			copyFixture(b, "cluster_1000_nodes", f.work)
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				f.clusterNodes(b, deliver, i)
				b.StartTimer()
				runScale(b, devTerraform(b, tf, f.work, bin), f.work, 1+3*clusterWorkers, true)
			}
		})
	}
}

// clusterNodes gives each worker a new directory (one per iteration) on
// host i mod n with the files a node has before kha (a kubelet.conf
// pointing at the first control-plane node, an /etc/hosts), and writes
// the variables.
func (f *fleet) clusterNodes(b *testing.B, deliver bool, iteration int) {
	nodes := map[string]map[string]any{}
	for i := range clusterWorkers {
		name := fmt.Sprintf("w%03d", i)
		host := i % len(f.servers)
		dir := filepath.Join(f.dirs[host], fmt.Sprintf("%s.%d", name, iteration))
		files := map[string]string{
			"kubelet.conf": "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n  name: kubernetes\n",
			"hosts":        "127.0.0.1 localhost\n",
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for file, content := range files {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		for _, p := range []string{dir, filepath.Join(dir, "kubelet.conf"), filepath.Join(dir, "hosts")} {
			if err := os.Chown(p, f.uid, f.gid); err != nil {
				b.Fatal(err)
			}
		}
		nodes[name] = map[string]any{"port": f.ports[host], "dir": dir}
	}
	text, _ := json.Marshal(map[string]any{"nodes": nodes, "deliver": deliver})
	f.write(b, "terraform.tfvars.json", string(text))
}

// BenchmarkResourceCost plans, applies and plans again (the no-op plan)
// 3,000 instances of one resource that only renders (no `ssh`: no host),
// in variants that tell apart what the cost per resource depends on:
// Terraform core's floor (terraform_data); a small schema with few
// computed attributes (kha_hosts_entries) with a small or a large value
// (the block is both an input and the computed `block`); a large schema
// with many computed attributes (kha_haproxy_config, 46 attributes, its
// `rendered` computed); `ssh` set on every resource (a plan only: an
// apply would go to the hosts); and a value read from the 1,000-node
// kha_cluster_endpoints directly or through a local value.
func BenchmarkResourceCost(b *testing.B) {
	tf := terraformPath(b)
	bin := buildProvider(b)
	const count = 3000
	// KHA_BENCH_PLAN_ONLY=1 measures the plans alone, for a quick look:
	// the applies take most of the time.
	planOnly := os.Getenv("KHA_BENCH_PLAN_ONLY") != ""
	// endpoints is the 1,000-node configuration's kha_cluster_endpoints,
	// which the variants with _ref in their name read from.
	endpoints := `resource "kha_cluster_endpoints" "e" {
  control_plane_nodes = [for i in range(3) : { name = "cp${i}", ip = "10.0.0.${i + 1}" }]
  worker_addresses    = { for i in range(997) : format("w%03d", i) => format("10.1.%d.%d", floor(i / 250), 1 + i % 250) }
  local_lb            = { type = "haproxy" }
}
`
	hostsEntries := func(entries string) string {
		return `resource "kha_hosts_entries" "r" {
  count   = 3000
  entries = ` + entries + `
  path    = "/etc/kha/${count.index}.hosts"
}`
	}
	for _, c := range []struct {
		name, hcl string
		apply     bool
	}{
		{"terraform_data", `resource "terraform_data" "r" {
  count = 3000
  input = "10.0.0.1 node${count.index}"
}`, true},
		{"kha_hosts_entries", hostsEntries(`["127.0.0.1 localhost", "10.0.0.1 node${count.index}"]`), true},
		{"kha_hosts_entries+16KiB", hostsEntries(`[for i in range(512) : "10.0.${floor(i / 250)}.${1 + i % 250} node${count.index}-${i}"]`), true},
		{"kha_hosts_entries+ssh", `resource "kha_hosts_entries" "r" {
  count   = 3000
  entries = ["127.0.0.1 localhost", "10.0.0.1 node${count.index}"]
  path    = "/etc/kha/${count.index}.hosts"
  ssh     = { host = "10.1.${floor(count.index / 250)}.${1 + count.index % 250}" }
}`, false},
		{"kha_hosts_entries+endpoints_ref", endpoints + hostsEntries(
			`["${kha_cluster_endpoints.e.local_lb_node_ips[format("w%03d", count.index % 997)]} node${count.index}"]`), true},
		{"kha_hosts_entries+endpoints_via_local", endpoints + `locals {
  node_ips = kha_cluster_endpoints.e.local_lb_node_ips
}
` + hostsEntries(`["${local.node_ips[format("w%03d", count.index % 997)]} node${count.index}"]`), true},
		{"kha_haproxy_config", `resource "kha_haproxy_config" "r" {
  count        = 3000
  listen       = { address = "127.0.0.1", port = 6443 }
  backends     = [for i in range(3) : { name = "cp${i}", address = "10.0.0.${i + 1}", port = 6443 }]
  health_check = { type = "tcp" }
  config_path  = "/etc/kha/${count.index}.cfg"
}`, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			work := b.TempDir()
			main := `terraform {
  required_providers {
    kha = { source = "kha/kha" }
  }
}
provider "kha" {
  default_ssh = { user = "kha", password = "-", insecure_trust_on_first_use = true }
}
` + c.hcl + "\n"
			if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(main), 0o600); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				runScale(b, devTerraform(b, tf, work, bin), work, count, c.apply && !planOnly)
			}
		})
	}
}
