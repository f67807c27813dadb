package install

import (
	"archive/zip"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"
)

// These tests install the provider as a user does, with the CLI the
// acceptance tests use (TF_ACC_TERRAFORM_PATH; Terraform or OpenTofu) and
// the release artifacts in KHA_RELEASE_DIST (make release-snapshot). make
// test sets both; without them the tests skip, and with CI or
// KHA_REQUIRE_REAL set they fail instead.

func required(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") != "" || os.Getenv("KHA_REQUIRE_REAL") != "" {
		t.Fatal(why)
	}
	t.Skip("skipping: " + why)
}

func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func cliPath(t *testing.T) string {
	t.Helper()
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		required(t, "TF_ACC_TERRAFORM_PATH is not set (eval \"$(scripts/tf-env.sh)\")")
	}
	return tf
}

func openRelease(t *testing.T) *Release {
	t.Helper()
	dist := os.Getenv("KHA_RELEASE_DIST")
	if dist == "" {
		required(t, "KHA_RELEASE_DIST is not set (make release-snapshot builds dist/; make test sets it)")
	}
	r, err := OpenRelease(dist)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// registryHost is where the CLI resolves "kha/kha": Terraform's registry,
// or OpenTofu's (scripts/tf-env.sh sets TF_ACC_PROVIDER_HOST for it).
func registryHost() string {
	if h := os.Getenv("TF_ACC_PROVIDER_HOST"); h != "" {
		return h
	}
	return "registry.terraform.io"
}

func localPlatform() string { return runtime.GOOS + "_" + runtime.GOARCH }

// workspace is a copy of examples/quickstart with its own HOME and CLI
// configuration, as a user's machine.
type workspace struct {
	t       *testing.T
	tf, dir string
	env     []string
}

// newWorkspace copies examples/quickstart; cliConfig is the CLI
// configuration's text, "" for none at all (the user's HOME has none).
func newWorkspace(t *testing.T, tf, home, cliConfig string, env ...string) *workspace {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(root(t), "examples/quickstart/main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	w := &workspace{t: t, tf: tf, dir: dir}
	for _, e := range os.Environ() {
		if name, _, _ := strings.Cut(e, "="); !strings.HasPrefix(name, "TF_") && name != "HOME" && name != "SSL_CERT_FILE" {
			w.env = append(w.env, e)
		}
	}
	w.env = append(w.env, "HOME="+home, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	if cliConfig != "" {
		rc := filepath.Join(t.TempDir(), "cli.tfrc")
		if err := os.WriteFile(rc, []byte(cliConfig), 0o644); err != nil {
			t.Fatal(err)
		}
		w.env = append(w.env, "TF_CLI_CONFIG_FILE="+rc)
	}
	w.env = append(w.env, env...)
	return w
}

func (w *workspace) run(args ...string) string {
	w.t.Helper()
	cmd := exec.Command(w.tf, args...)
	cmd.Dir, cmd.Env = w.dir, w.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("%s %s: %v\n%s", filepath.Base(w.tf), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// initAndPlan runs init and a plan of the quickstart, checks that the CLI
// selected the release's version and that the provider says so in its log,
// and returns init's output and the lock file's hashes.
func (w *workspace) initAndPlan(version string) (string, map[string][]string) {
	w.t.Helper()
	initOut := w.run("init", "-input=false", "-no-color")
	lock, err := os.ReadFile(filepath.Join(w.dir, ".terraform.lock.hcl"))
	if err != nil {
		w.t.Fatal(err)
	}
	address := registryHost() + "/kha/kha"
	hashes, err := LockHashes(lock, address)
	if err != nil {
		w.t.Fatal(err)
	}
	if !strings.Contains(string(lock), fmt.Sprintf("version     = %q", version)) ||
		!strings.Contains(string(lock), `constraints = "~> 0.1"`) {
		w.t.Errorf("the lock file does not select %s under ~> 0.1:\n%s", version, lock)
	}
	w.t.Logf("%s init:\n%s\n.terraform.lock.hcl:\n%s", filepath.Base(w.tf), initOut, lock)

	var v struct {
		ProviderSelections map[string]string `json:"provider_selections"`
	}
	if err := json.Unmarshal([]byte(w.run("version", "-json")), &v); err != nil {
		w.t.Fatal(err)
	}
	if got := v.ProviderSelections[address]; got != version {
		w.t.Errorf("version -json: provider_selections[%s] = %q, want %q", address, got, version)
	}

	w.env = append(w.env, "TF_LOG_PROVIDER=INFO")
	plan := w.run("plan", "-input=false", "-no-color")
	w.env = w.env[:len(w.env)-1]
	for _, want := range []string{"kha_cluster_endpoints.cluster will be created", "configuring the kha provider",
		"version=" + version, "user_agent=terraform-provider-kha/" + version} {
		if !strings.Contains(plan, want) {
			w.t.Errorf("the plan's output lacks %q:\n%s", want, plan)
		}
	}
	return initOut, hashes
}

// mirrorServer serves the release by the network mirror protocol over
// HTTPS on loopback; the returned environment makes the CLI trust its
// certificate (both CLIs are Go programs: SSL_CERT_FILE replaces the
// system's roots).
func mirrorServer(t *testing.T, r *Release) (url string, env []string, seen func() []string, stop func()) {
	t.Helper()
	var mu sync.Mutex
	hosts := map[string]bool{}
	srv := httptest.NewUnstartedServer(MirrorHandler(r, "kha", "kha", func(s string) { mu.Lock(); hosts[s] = true; mu.Unlock() }))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	certFile := filepath.Join(t.TempDir(), "mirror-ca.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL + "/", []string{"SSL_CERT_FILE=" + certFile}, func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for h := range hosts {
			out = append(out, h)
		}
		sort.Strings(out)
		return out
	}, srv.Close
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

// The release's artifacts are what the registry wants: a zip per platform
// of .goreleaser.yml holding one executable named for the version,
// SHA256SUMS covering exactly the zips and the manifest (protocol 6), and a
// signature of the sums that verifies.
func TestRelease_artifacts(t *testing.T) {
	r := openRelease(t)
	config, err := os.ReadFile(filepath.Join(root(t), ".goreleaser.yml"))
	if err != nil {
		t.Fatal(err)
	}
	platforms, err := GoreleaserPlatforms(config)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for p := range r.Zips {
		got = append(got, p)
	}
	if sort.Strings(got); !slices.Equal(got, platforms) {
		t.Errorf("zips for %v, .goreleaser.yml builds %v", got, platforms)
	}
	want := []string{r.ManifestFile()}
	for _, z := range r.Zips {
		want = append(want, z)
	}
	var summed []string
	for name, hash := range r.Sums {
		summed = append(summed, name)
		if h, err := FileSHA256(filepath.Join(r.Dir, name)); err != nil || h != hash {
			t.Errorf("%s: sha256 %s, SHA256SUMS says %s (%v)", name, h, hash, err)
		}
	}
	if !slices.Equal(sortedCopy(summed), sortedCopy(want)) {
		t.Errorf("SHA256SUMS covers %v, want %v", sortedCopy(summed), sortedCopy(want))
	}
	manifest, err := os.ReadFile(filepath.Join(r.Dir, r.ManifestFile()))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Version  int `json:"version"`
		Metadata struct {
			ProtocolVersions []string `json:"protocol_versions"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(manifest, &m); err != nil || m.Version != 1 || !slices.Equal(m.Metadata.ProtocolVersions, []string{"6.0"}) {
		t.Errorf("manifest %s: %+v %v", manifest, m, err)
	}
	for p, name := range r.Zips {
		zr, err := zip.OpenReader(filepath.Join(r.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var bins []string
		for _, f := range zr.File {
			if strings.HasPrefix(f.Name, Project) {
				bins = append(bins, f.Name)
			}
		}
		zr.Close()
		if !slices.Equal(bins, []string{r.BinaryName(p)}) {
			t.Errorf("%s holds %v, want the executable %s", name, bins, r.BinaryName(p))
		}
	}

	gnupg := t.TempDir()
	gpg := func(args ...string) string {
		cmd := exec.Command("gpg", append([]string{"--batch", "--homedir", gnupg}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("gpg %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	gpg("--import", filepath.Join(r.Dir, "signing-key.asc"))
	out := gpg("--verify", filepath.Join(r.Dir, r.SignatureFile()), filepath.Join(r.Dir, r.SumsFile()))
	if !strings.Contains(out, "Good signature") {
		t.Errorf("gpg --verify: %s", out)
	}
	t.Logf("release %s: %d zips, %s, %s; gpg --verify: %s", r.Version, len(r.Zips), r.SumsFile(), r.SignatureFile(), strings.TrimSpace(out))
}

// terraform init through a provider network mirror serving the release:
// the lock file's zh: hashes are SHA256SUMS' for every platform, its h1:
// hash is this platform's zip, and the quickstart plans.
func TestInstall_networkMirror(t *testing.T) {
	tf, r := cliPath(t), openRelease(t)
	url, env, seen, _ := mirrorServer(t, r)
	w := newWorkspace(t, tf, t.TempDir(),
		fmt.Sprintf("provider_installation {\n  network_mirror {\n    url = %q\n  }\n}\n", url), env...)
	_, hashes := w.initAndPlan(r.Version)
	checkLockHashes(t, r, hashes, mapKeys(r.Zips))
	if got, want := seen(), []string{registryHost() + "/kha/kha"}; !slices.Equal(got, want) {
		t.Errorf("the mirror was asked for %v, want %v", got, want)
	}
}

// terraform providers mirror copies the release into a filesystem mirror;
// with the network mirror gone, init installs from the directory alone.
func TestInstall_filesystemMirror(t *testing.T) {
	tf, r := cliPath(t), openRelease(t)
	url, env, _, stop := mirrorServer(t, r)
	networkRC := fmt.Sprintf("provider_installation {\n  network_mirror {\n    url = %q\n  }\n}\n", url)
	mirror := t.TempDir()
	platforms := []string{localPlatform(), "darwin_arm64", "windows_amd64"}
	args := []string{"providers", "mirror"}
	for _, p := range platforms {
		args = append(args, "-platform="+p)
	}
	w := newWorkspace(t, tf, t.TempDir(), networkRC, env...)
	t.Logf("%s providers mirror:\n%s", filepath.Base(tf), w.run(append(args, mirror)...))
	for _, p := range platforms {
		zip := filepath.Join(mirror, registryHost(), "kha", "kha", r.Zips[p])
		if h, err := FileSHA256(zip); err != nil || "zh:"+h != r.ZipHash(p) {
			t.Errorf("%s: sha256 %s, SHA256SUMS has %s (%v)", zip, h, r.ZipHash(p), err)
		}
	}
	stop()

	w = newWorkspace(t, tf, t.TempDir(), fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", mirror))
	_, hashes := w.initAndPlan(r.Version)
	checkLockHashes(t, r, hashes, platforms)
}

// checkLockHashes: the lock's zh: hashes are SHA256SUMS' for exactly the
// platforms the source offered, and its h1: hashes include this
// platform's zip's.
func checkLockHashes(t *testing.T, r *Release, hashes map[string][]string, platforms []string) {
	t.Helper()
	var want []string
	for _, p := range platforms {
		want = append(want, r.ZipHash(p))
	}
	if got := sortedCopy(hashes["zh"]); !slices.Equal(got, sortedCopy(want)) {
		t.Errorf("lock zh: hashes %v, want SHA256SUMS' %v", got, sortedCopy(want))
	}
	h1, err := dirhash.HashZip(filepath.Join(r.Dir, r.Zips[localPlatform()]), dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(hashes["h1"], h1) {
		t.Errorf("lock h1: hashes %v lack this platform's zip's %s", hashes["h1"], h1)
	}
}

func mapKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// make install, then terraform init with no CLI configuration at all, as
// README's Installing section says.
func TestInstall_makeInstall(t *testing.T) {
	tf := cliPath(t)
	home := t.TempDir()
	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	cmd := exec.Command("make", "--no-print-directory", "install")
	cmd.Dir = root(t)
	// The user's HOME is a new one; Go keeps its caches.
	cmd.Env = append(os.Environ(), "HOME="+home, "GOPATH="+goEnv("GOPATH"), "GOCACHE="+goEnv("GOCACHE"),
		"GOMODCACHE="+goEnv("GOMODCACHE"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	t.Logf("make install:\n%s", out)
	version, err := exec.Command(filepath.Join(root(t), "scripts/version.sh")).Output()
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(version))
	bin := filepath.Join(home, ".terraform.d/plugins", registryHost(), "kha/kha", v, localPlatform(), Project+"_v"+v)
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("make install: no executable %s (%v)", bin, err)
	}
	w := newWorkspace(t, tf, home, "")
	_, hashes := w.initAndPlan(v)
	if len(hashes["h1"]) != 1 || len(hashes["zh"]) != 0 {
		t.Errorf("a local build locks one h1: hash, got %v", hashes)
	}
}
