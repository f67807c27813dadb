package install

import (
	"archive/zip"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
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
		Required(t, "TF_ACC_TERRAFORM_PATH is not set (eval \"$(scripts/tf-env.sh)\")")
	}
	return tf
}

func openRelease(t *testing.T) *Release {
	t.Helper()
	dist := os.Getenv("KHA_RELEASE_DIST")
	if dist == "" {
		Required(t, "KHA_RELEASE_DIST is not set (make release-snapshot builds dist/; make test sets it)")
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

// lockHashes are the hashes .terraform.lock.hcl records for kha/kha.
func (w *workspace) lockHashes() map[string][]string {
	w.t.Helper()
	lock, err := os.ReadFile(filepath.Join(w.dir, ".terraform.lock.hcl"))
	if err != nil {
		w.t.Fatal(err)
	}
	hashes, err := LockHashes(lock, registryHost()+"/kha/kha")
	if err != nil {
		w.t.Fatal(err)
	}
	return hashes
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
	hashes := w.lockHashes()
	// The quickstart names the release's minor version, as users do.
	constraint := "~> " + strings.Join(strings.SplitN(version, ".", 3)[:2], ".")
	if !strings.Contains(string(lock), fmt.Sprintf("version     = %q", version)) ||
		!strings.Contains(string(lock), fmt.Sprintf("constraints = %q", constraint)) {
		w.t.Errorf("the lock file does not select %s under %s:\n%s", version, constraint, lock)
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

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

// The release's artifacts are what the registry wants: a zip per platform
// of .goreleaser.yml (or of those a snapshot was limited to, listed in
// .platforms) holding one executable named for the version, SHA256SUMS
// covering exactly the zips and the manifest (protocol 6), and a signature
// of the sums that verifies.
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
	if limited, err := os.ReadFile(filepath.Join(r.Dir, ".platforms")); err == nil {
		subset := strings.Fields(string(limited))
		for _, p := range subset {
			if !slices.Contains(platforms, p) {
				t.Errorf("the snapshot was limited to %s, which .goreleaser.yml does not build (%v)", p, platforms)
			}
		}
		platforms = sortedCopy(subset)
		t.Logf("a snapshot of %d of .goreleaser.yml's platforms", len(platforms))
	}
	var got []string
	for p := range r.Zips {
		got = append(got, p)
	}
	if sort.Strings(got); !slices.Equal(got, platforms) {
		t.Errorf("zips for %v, the snapshot builds %v", got, platforms)
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
		if err := zr.Close(); err != nil {
			t.Error(err)
		}
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

// terraform init through a provider network mirror serving the release
// (as an organization's mirror would): the CLI checks the zip against the
// mirror's zh: hash (SHA256SUMS') and locks the h1: hash of what it
// unpacked (OpenTofu the zh: hash too); terraform providers lock through
// the same mirror adds the other platforms' hashes, each that of the zip
// SHA256SUMS names.
func TestInstall_networkMirror(t *testing.T) {
	tf, r := cliPath(t), openRelease(t)
	url, env, seen := serve(t, MirrorHandler(r, "kha", "kha", nil))
	w := newWorkspace(t, tf, t.TempDir(),
		fmt.Sprintf("provider_installation {\n  network_mirror {\n    url = %q\n  }\n}\n", url), env...)
	initOut, hashes := w.initAndPlan(r.Version)
	if !strings.Contains(initOut, "Installed kha/kha v"+r.Version+" (verified checksum)") {
		t.Errorf("init did not verify the checksum:\n%s", initOut)
	}
	checkLockHashes(t, r, hashes, mirrorZH(r, localPlatform()), []string{localPlatform()})

	platforms := []string{localPlatform(), "darwin_arm64", "windows_amd64"}
	args := []string{"providers", "lock", "-net-mirror=" + url}
	for _, p := range platforms {
		args = append(args, "-platform="+p)
	}
	t.Logf("%s providers lock:\n%s", filepath.Base(tf), w.run(args...))
	checkLockHashes(t, r, w.lockHashes(), mirrorZH(r, platforms...), platforms)
	if got := seen(); !slices.Contains(got, registryHost()+"/kha/kha") {
		t.Errorf("the mirror was asked for %v, want %s/kha/kha", got, registryHost())
	}
}

// terraform init from a registry, by the registry protocol the public
// registry speaks (the CLI's discovery of its registry host pointed at a
// loopback server): the CLI takes the protocol versions from the release's
// manifest, verifies SHA256SUMS' signature with the release's key and the
// zip against SHA256SUMS, and locks SHA256SUMS' zh: hash of every
// platform. terraform providers mirror then copies the release into a
// filesystem mirror, from which init installs with the registry gone.
func TestInstall_registryAndFilesystemMirror(t *testing.T) {
	tf, r := cliPath(t), openRelease(t)
	key := signingKey(t, r)
	h, err := RegistryHandler(r, "kha", "kha", key)
	if err != nil {
		t.Fatal(err)
	}
	url, env, _ := serve(t, h)
	registryRC := fmt.Sprintf("host %q {\n  services = {\n    \"providers.v1\" = %q\n  }\n}\n", registryHost(), url+"v1/providers/")
	w := newWorkspace(t, tf, t.TempDir(), registryRC, env...)
	initOut, hashes := w.initAndPlan(r.Version)
	if !strings.Contains(initOut, "key ID "+key.KeyID) {
		t.Errorf("init did not check the signature of key %s:\n%s", key.KeyID, initOut)
	}
	// Terraform locks every hash of the signed SHA256SUMS (the manifest's
	// too); the zips' are among them.
	var signed []string
	for _, sum := range r.Sums {
		signed = append(signed, "zh:"+sum)
	}
	checkLockHashes(t, r, hashes, signed, []string{localPlatform()})

	mirror := t.TempDir()
	platforms := []string{localPlatform(), "darwin_arm64", "windows_amd64"}
	args := []string{"providers", "mirror"}
	for _, p := range platforms {
		args = append(args, "-platform="+p)
	}
	t.Logf("%s providers mirror:\n%s", filepath.Base(tf), w.run(append(args, mirror)...))
	for _, p := range platforms {
		zip := filepath.Join(mirror, registryHost(), "kha", "kha", r.Zips[p])
		if h, err := FileSHA256(zip); err != nil || "zh:"+h != r.ZipHash(p) {
			t.Errorf("%s: sha256 %s, SHA256SUMS has %s (%v)", zip, h, r.ZipHash(p), err)
		}
	}

	w = newWorkspace(t, tf, t.TempDir(), FilesystemMirrorConfig(mirror))
	_, hashes = w.initAndPlan(r.Version)
	checkLockHashes(t, r, hashes, nil, []string{localPlatform()})
}

// serve starts an HTTPS server on loopback; the returned environment makes
// the CLI trust its certificate (both CLIs are Go programs: SSL_CERT_FILE
// replaces the system's roots). seen lists what a MirrorHandler was asked.
func serve(t *testing.T, h http.Handler) (url string, env []string, seen func() []string) {
	t.Helper()
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		parts := strings.Split(strings.TrimPrefix(req.URL.Path, "/"), "/")
		if len(parts) > 3 {
			paths = append(paths, strings.Join(parts[:3], "/"))
		}
		mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	certFile := filepath.Join(t.TempDir(), "loopback-ca.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL + "/", []string{"SSL_CERT_FILE=" + certFile}, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(paths)
	}
}

// signingKey is the release's public key (dist/signing-key.asc) with its
// long key ID, as a registry lists it.
func signingKey(t *testing.T, r *Release) SigningKey {
	t.Helper()
	armor, err := os.ReadFile(filepath.Join(r.Dir, "signing-key.asc"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("gpg", "--batch", "--homedir", t.TempDir(), "--with-colons", "--import-options", "show-only",
		"--import", filepath.Join(r.Dir, "signing-key.asc")).Output()
	if err != nil {
		t.Fatalf("gpg --import-options show-only: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Split(line, ":"); len(f) > 4 && f[0] == "pub" {
			return SigningKey{KeyID: f[4], ASCIIArmor: string(armor)}
		}
	}
	t.Fatalf("no public key in signing-key.asc:\n%s", out)
	return SigningKey{}
}

// mirrorZH is what a CLI locks as zh: hashes from a network mirror: Terraform
// none (only the h1: hashes it computes), OpenTofu the mirror's, which are
// SHA256SUMS'.
func mirrorZH(r *Release, platforms ...string) []string {
	if registryHost() == "registry.terraform.io" {
		return nil
	}
	var out []string
	for _, p := range platforms {
		out = append(out, r.ZipHash(p))
	}
	return out
}

// checkLockHashes: the lock's zh: hashes are exactly zh, and its h1:
// hashes include those of the zips of the h1 platforms (Terraform's h1: is
// dirhash.Hash1 of a zip's contents), each zip as SHA256SUMS has it.
func checkLockHashes(t *testing.T, r *Release, hashes map[string][]string, zh, h1 []string) {
	t.Helper()
	if got := sortedCopy(hashes["zh"]); !slices.Equal(got, sortedCopy(zh)) {
		t.Errorf("lock zh: hashes %v, want SHA256SUMS' %v", got, sortedCopy(zh))
	}
	for _, p := range h1 {
		zip := filepath.Join(r.Dir, r.Zips[p])
		if sum, err := FileSHA256(zip); err != nil || "zh:"+sum != r.ZipHash(p) {
			t.Fatalf("%s does not match SHA256SUMS (%v)", zip, err)
		}
		h, err := dirhash.HashZip(zip, dirhash.Hash1)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(hashes["h1"], h) {
			t.Errorf("lock h1: hashes %v lack %s's %s", hashes["h1"], p, h)
		}
	}
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

// README's one command for a team on several platforms, run as written:
// providers lock from the release snapshot's filesystem mirror records the
// h1: hash of every platform it names, and init from that mirror then
// takes the lock as complete (no "incomplete lock file" warning).
func TestInstall_lockEveryPlatform(t *testing.T) {
	tf, r := cliPath(t), openRelease(t)
	readme, err := os.ReadFile(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var command string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "terraform providers lock -fs-mirror=") {
			command = line
		}
	}
	if command == "" {
		t.Fatal("README.md has no line that starts with `terraform providers lock -fs-mirror=`")
	}
	var platforms []string
	for _, arg := range strings.Fields(command) {
		if p, ok := strings.CutPrefix(arg, "-platform="); ok {
			platforms = append(platforms, p)
		}
	}
	mirror := filepath.Join(r.Dir, "mirror")
	if filepath.Base(r.Dir) != "dist" {
		t.Fatalf("README's command reads $KHA/dist/mirror; KHA_RELEASE_DIST is %s", r.Dir)
	}
	w := newWorkspace(t, tf, t.TempDir(), FilesystemMirrorConfig(mirror))
	// README's `terraform` is the CLI under test (OpenTofu's takes the same
	// arguments).
	bin := t.TempDir()
	if err := os.Symlink(tf, filepath.Join(bin, "terraform")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir, cmd.Env = w.dir, append(slices.Clone(w.env), "KHA="+filepath.Dir(r.Dir), "PATH="+bin+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
	t.Logf("%s:\n%s", command, out)
	// Whatever zh: hashes the CLI adds, the h1: of every platform's zip.
	checkLockHashes(t, r, w.lockHashes(), w.lockHashes()["zh"], platforms)
	initOut, hashes := w.initAndPlan(r.Version)
	if strings.Contains(strings.ToLower(initOut), "incomplete lock file") {
		t.Errorf("init warns of an incomplete lock file after README's command:\n%s", initOut)
	}
	checkLockHashes(t, r, hashes, hashes["zh"], platforms)
}
