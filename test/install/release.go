// Package install tests the provider as users get it: the release artifacts
// that scripts/release-snapshot.sh builds from .goreleaser.yml, installed by
// `terraform init` through a provider network mirror and a filesystem
// mirror, and `make install`'s local build.
package install

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Project is the provider's name: the prefix of every release file.
const Project = "terraform-provider-kha"

// Required skips a test that lacks what make test hands it (a release
// build, a CLI), saying why; with CI or KHA_REQUIRE_REAL set it fails
// instead.
func Required(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" || os.Getenv("KHA_REQUIRE_REAL") != "" {
		t.Fatal(why)
	}
	t.Skip("skipping: " + why)
}

// FilesystemMirrorConfig is a CLI configuration that installs from the
// filesystem mirror at dir alone.
func FilesystemMirrorConfig(dir string) string {
	return fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", dir)
}

// Release is a directory of release artifacts (goreleaser's dist/).
type Release struct {
	Dir     string
	Version string
	// Zips maps a platform (linux_amd64) to its zip's file name.
	Zips map[string]string
	// Sums maps a file name to the SHA-256 SHA256SUMS gives it.
	Sums map[string]string
}

var zipName = regexp.MustCompile(`^` + Project + `_([0-9][^_]*)_([a-z0-9]+)_([a-z0-9]+)\.zip$`)

// OpenRelease reads dir's zips and SHA256SUMS; every zip must be of one
// version and listed in the sums with the hash of its bytes.
func OpenRelease(dir string) (*Release, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	r := &Release{Dir: dir, Zips: map[string]string{}}
	for _, e := range entries {
		m := zipName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		if r.Version != "" && r.Version != m[1] {
			return nil, fmt.Errorf("%s: zips of two versions, %s and %s", dir, r.Version, m[1])
		}
		r.Version = m[1]
		r.Zips[m[2]+"_"+m[3]] = e.Name()
	}
	if len(r.Zips) == 0 {
		return nil, fmt.Errorf("%s holds no %s_<version>_<os>_<arch>.zip", dir, Project)
	}
	if r.Sums, err = readSums(filepath.Join(dir, r.SumsFile())); err != nil {
		return nil, err
	}
	return r, nil
}

// SumsFile is the name of the checksums the registry expects next to
// the zips.
func (r *Release) SumsFile() string { return fmt.Sprintf("%s_%s_SHA256SUMS", Project, r.Version) }

// SignatureFile is the name of the checksums' detached signature.
func (r *Release) SignatureFile() string { return r.SumsFile() + ".sig" }

// ManifestFile is the name of the registry manifest beside the zips.
func (r *Release) ManifestFile() string {
	return fmt.Sprintf("%s_%s_manifest.json", Project, r.Version)
}

// BinaryName is the executable inside every zip (".exe" on Windows).
func (r *Release) BinaryName(p string) string {
	name := fmt.Sprintf("%s_v%s", Project, r.Version)
	if strings.HasPrefix(p, "windows_") {
		name += ".exe"
	}
	return name
}

// ZipHash is Terraform's "zh:" hash of a platform's zip: its SHA-256 as
// SHA256SUMS has it.
func (r *Release) ZipHash(platform string) string {
	return "zh:" + r.Sums[r.Zips[platform]]
}

func readSums(file string) (map[string]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sums := map[string]string{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		hash, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(hash) != 64 {
			return nil, fmt.Errorf("%s: not a sha256sum line: %q", file, sc.Text())
		}
		sums[name] = hash
	}
	return sums, nil
}

// FileSHA256 is the hex SHA-256 of a file's bytes.
func FileSHA256(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// GoreleaserPlatforms are the platforms a .goreleaser.yml's builds make:
// every goos × goarch but the ignored pairs, sorted.
func GoreleaserPlatforms(config []byte) ([]string, error) {
	type pair struct {
		GOOS   string `yaml:"goos"`
		GOARCH string `yaml:"goarch"`
	}
	var c struct {
		Builds []struct {
			GOOS   []string `yaml:"goos"`
			GOARCH []string `yaml:"goarch"`
			Ignore []pair   `yaml:"ignore"`
		} `yaml:"builds"`
	}
	if err := yaml.Unmarshal(config, &c); err != nil {
		return nil, err
	}
	var out []string
	for _, b := range c.Builds {
		for _, os := range b.GOOS {
			for _, arch := range b.GOARCH {
				if !slices.Contains(b.Ignore, pair{os, arch}) {
					out = append(out, os+"_"+arch)
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// MirrorHandler serves a release by Terraform's provider network mirror
// protocol, under any registry host name (Terraform's and OpenTofu's):
//
//	GET /<host>/<namespace>/<type>/index.json     {"versions": {"0.1.0": {}}}
//	GET /<host>/<namespace>/<type>/<version>.json {"archives": {"linux_amd64": {"url": ..., "hashes": ["zh:..."]}}}
//	GET /<host>/<namespace>/<type>/<zip>          the zip
//
// seen receives each request's "<host>/<namespace>/<type>".
func MirrorHandler(r *Release, namespace, typ string, seen func(string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		parts := strings.Split(strings.TrimPrefix(path.Clean(req.URL.Path), "/"), "/")
		if len(parts) != 4 || parts[1] != namespace || parts[2] != typ || req.Method != http.MethodGet {
			http.NotFound(w, req)
			return
		}
		if seen != nil {
			seen(strings.Join(parts[:3], "/"))
		}
		switch file := parts[3]; {
		case file == "index.json":
			writeJSON(w, map[string]any{"versions": map[string]any{r.Version: map[string]any{}}})
		case file == r.Version+".json":
			archives := map[string]any{}
			for p, zip := range r.Zips {
				archives[p] = map[string]any{"url": zip, "hashes": []string{r.ZipHash(p)}}
			}
			writeJSON(w, map[string]any{"archives": archives})
		case slices.Contains(mapValues(r.Zips), file):
			http.ServeFile(w, req, filepath.Join(r.Dir, file))
		default:
			http.NotFound(w, req)
		}
	})
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

var lockHash = regexp.MustCompile(`"((?:zh|h1):[^"]+)"`)

// LockHashes are the hashes a .terraform.lock.hcl records for one provider
// address (registry.terraform.io/kha/kha), by scheme ("zh", "h1").
func LockHashes(lock []byte, address string) (map[string][]string, error) {
	text := string(lock)
	start := strings.Index(text, fmt.Sprintf("provider %q {", address))
	if start < 0 {
		return nil, fmt.Errorf("the lock file has no provider %q:\n%s", address, text)
	}
	block := text[start:]
	if end := strings.Index(block, "\n}"); end >= 0 {
		block = block[:end]
	}
	out := map[string][]string{}
	for _, m := range lockHash.FindAllStringSubmatch(block, -1) {
		scheme, _, _ := strings.Cut(m[1], ":")
		out[scheme] = append(out[scheme], m[1])
	}
	return out, nil
}

// SigningKey is the public key a registry gives for a release's signature.
type SigningKey struct {
	KeyID      string `json:"key_id"`
	ASCIIArmor string `json:"ascii_armor"`
}

// RegistryHandler serves a release by the provider registry protocol
// (service providers.v1, based at /v1/providers/), as the public registry
// does: the versions with the protocols of the release's manifest, and per
// platform the zip, SHA256SUMS, its signature and the signing key, which
// the CLI verifies before it installs anything.
//
//	GET /v1/providers/<namespace>/<type>/versions
//	GET /v1/providers/<namespace>/<type>/<version>/download/<os>/<arch>
//	GET /files/<name>   a zip, SHA256SUMS or its signature
func RegistryHandler(r *Release, namespace, typ string, key SigningKey) (http.Handler, error) {
	manifest, err := os.ReadFile(filepath.Join(r.Dir, r.ManifestFile()))
	if err != nil {
		return nil, err
	}
	var m struct {
		Metadata struct {
			ProtocolVersions []string `json:"protocol_versions"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", r.ManifestFile(), err)
	}
	protocols := m.Metadata.ProtocolVersions
	files := append(mapValues(r.Zips), r.SumsFile(), r.SignatureFile())
	prefix := "/v1/providers/" + namespace + "/" + typ + "/"
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p := path.Clean(req.URL.Path)
		base := "https://" + req.Host + "/files/"
		switch {
		case p == prefix+"versions":
			var platforms []map[string]string
			for _, pl := range sortedKeys(r.Zips) {
				os, arch, _ := strings.Cut(pl, "_")
				platforms = append(platforms, map[string]string{"os": os, "arch": arch})
			}
			writeJSON(w, map[string]any{"versions": []any{map[string]any{
				"version": r.Version, "protocols": protocols, "platforms": platforms}}})
		case strings.HasPrefix(p, prefix+r.Version+"/download/"):
			osArch := strings.Split(strings.TrimPrefix(p, prefix+r.Version+"/download/"), "/")
			zip, ok := r.Zips[strings.Join(osArch, "_")]
			if len(osArch) != 2 || !ok {
				http.NotFound(w, req)
				return
			}
			writeJSON(w, map[string]any{
				"protocols": protocols, "os": osArch[0], "arch": osArch[1],
				"filename": zip, "download_url": base + zip, "shasum": r.Sums[zip],
				"shasums_url": base + r.SumsFile(), "shasums_signature_url": base + r.SignatureFile(),
				"signing_keys": map[string]any{"gpg_public_keys": []SigningKey{key}},
			})
		case strings.HasPrefix(p, "/files/") && slices.Contains(files, strings.TrimPrefix(p, "/files/")):
			http.ServeFile(w, req, filepath.Join(r.Dir, strings.TrimPrefix(p, "/files/")))
		default:
			http.NotFound(w, req)
		}
	}), nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
