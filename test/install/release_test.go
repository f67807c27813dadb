package install

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The platforms .goreleaser.yml builds: what the registry offers users.
func TestGoreleaserPlatforms(t *testing.T) {
	config, err := os.ReadFile("../../.goreleaser.yml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := GoreleaserPlatforms(config)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"darwin_amd64", "darwin_arm64", "freebsd_386", "freebsd_amd64", "freebsd_arm", "freebsd_arm64",
		"linux_386", "linux_amd64", "linux_arm", "linux_arm64", "windows_386", "windows_amd64", "windows_arm64"}
	if !slices.Equal(got, want) {
		t.Errorf("platforms = %v, want %v", got, want)
	}
}

// fakeRelease writes a release of two platforms with correct sums.
func fakeRelease(t *testing.T) *Release {
	t.Helper()
	dir := t.TempDir()
	var sums strings.Builder
	for _, p := range []string{"linux_amd64", "darwin_arm64"} {
		name := Project + "_0.1.0_" + p + ".zip"
		if err := os.WriteFile(filepath.Join(dir, name), []byte("zip of "+p), 0o644); err != nil {
			t.Fatal(err)
		}
		h, _ := FileSHA256(filepath.Join(dir, name))
		sums.WriteString(h + "  " + name + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, Project+"_0.1.0_SHA256SUMS"), []byte(sums.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRelease(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The network mirror protocol as Terraform asks it, for any registry host.
func TestMirrorHandler(t *testing.T) {
	r := fakeRelease(t)
	var seen []string
	srv := httptest.NewServer(MirrorHandler(r, "kha", "kha", func(s string) { seen = append(seen, s) }))
	defer srv.Close()
	get := func(p string) (int, []byte) {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	code, body := get("/registry.opentofu.org/kha/kha/index.json")
	if code != 200 || strings.TrimSpace(string(body)) != `{"versions":{"0.1.0":{}}}` {
		t.Errorf("index.json: %d %s", code, body)
	}
	code, body = get("/registry.terraform.io/kha/kha/0.1.0.json")
	var v struct {
		Archives map[string]struct {
			URL    string   `json:"url"`
			Hashes []string `json:"hashes"`
		} `json:"archives"`
	}
	if err := json.Unmarshal(body, &v); code != 200 || err != nil {
		t.Fatalf("0.1.0.json: %d %s %v", code, body, err)
	}
	a := v.Archives["linux_amd64"]
	if a.URL != Project+"_0.1.0_linux_amd64.zip" || !slices.Equal(a.Hashes, []string{r.ZipHash("linux_amd64")}) || len(v.Archives) != 2 {
		t.Errorf("0.1.0.json: %+v", v)
	}
	if code, body = get("/registry.terraform.io/kha/kha/" + a.URL); code != 200 || string(body) != "zip of linux_amd64" {
		t.Errorf("zip: %d %q", code, body)
	}
	for _, p := range []string{"/registry.terraform.io/hashicorp/kha/index.json", "/registry.terraform.io/kha/kha/0.2.0.json",
		"/registry.terraform.io/kha/kha/../../../etc/passwd", "/registry.terraform.io/kha/kha/" + Project + "_0.1.0_SHA256SUMS"} {
		if code, _ := get(p); code != 404 {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
	if !slices.Contains(seen, "registry.opentofu.org/kha/kha") || !slices.Contains(seen, "registry.terraform.io/kha/kha") {
		t.Errorf("seen = %v", seen)
	}
}

// A release whose zip does not match its sums is refused.
func TestOpenReleaseChecksNames(t *testing.T) {
	r := fakeRelease(t)
	if r.Version != "0.1.0" || len(r.Zips) != 2 || r.ZipHash("darwin_arm64") == "zh:" {
		t.Fatalf("%+v", r)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, Project+"_0.2.0_linux_arm64.zip"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRelease(r.Dir); err == nil || !strings.Contains(err.Error(), "two versions") {
		t.Errorf("two versions: %v", err)
	}
	if _, err := OpenRelease(t.TempDir()); err == nil {
		t.Error("an empty directory is no release")
	}
}

func TestLockHashes(t *testing.T) {
	lock := []byte(`# This file is maintained automatically by "terraform init".
provider "registry.terraform.io/hashicorp/other" {
  version = "1.0.0"
  hashes = [
    "h1:other=",
  ]
}

provider "registry.terraform.io/kha/kha" {
  version     = "0.1.0"
  constraints = "~> 0.1"
  hashes = [
    "h1:abc=",
    "zh:0123",
    "zh:4567",
  ]
}
`)
	got, err := LockHashes(lock, "registry.terraform.io/kha/kha")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got["h1"], []string{"h1:abc="}) || !slices.Equal(got["zh"], []string{"zh:0123", "zh:4567"}) {
		t.Errorf("hashes = %v", got)
	}
	if _, err := LockHashes(lock, "registry.opentofu.org/kha/kha"); err == nil {
		t.Error("a provider the lock does not name")
	}
}
