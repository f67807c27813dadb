package remote

import (
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// An exit status, or a status restore exits with, written as a number.
	literalExit = regexp.MustCompile(`\b(exit|restore)\s+["']?[0-9]`)
	// A positional parameter ($0 is the script's name, and awk's record).
	positional = regexp.MustCompile(`\$[1-9]|\$\{[0-9]*[1-9][0-9]*\}`)
	// A shell function, whose positional parameters are its own arguments.
	function = regexp.MustCompile(`(?ms)^[a-z_]+\(\) \{$.*?^\}$`)
	// A generated variable a script uses.
	generatedVariable = regexp.MustCompile(`\b(EXIT|WORD)_[A-Z_]+`)
)

// unnamed lists what a script body writes by number that the
// declarations should name: exit statuses and the script's parameters.
func unnamed(body string) []string {
	found := literalExit.FindAllString(body, -1)
	return append(found, positional.FindAllString(function.ReplaceAllString(body, ""), -1)...)
}

// TestScriptsNameEveryExitAndParameter: no script body exits with a
// number or reads a parameter by position; both go through the generated
// header, and every generated variable a body uses is defined.
func TestScriptsNameEveryExitAndParameter(t *testing.T) {
	if len(scripts) < 7 {
		t.Fatalf("%d scripts declared, want apply, stat, remove, block, block read, read and preflight", len(scripts))
	}
	for _, s := range scripts {
		name, _, _ := strings.Cut(strings.TrimSpace(s.body), "\n")
		if found := unnamed(s.body); len(found) > 0 {
			t.Errorf("script %q: %q by number; declare it in protocol.go and use its variable", name, found)
		}
		for _, v := range generatedVariable.FindAllString(s.body, -1) {
			if !strings.Contains(shellDefinitions, v+"=") {
				t.Errorf("script %q uses %s, which nothing defines", name, v)
			}
		}
		if out, err := exec.Command("sh", "-n", "-c", s.header+s.body).CombinedOutput(); err != nil {
			t.Errorf("script %q: %v\n%s", name, err, out)
		}
	}
}

// TestUnnamedFindsNumbers: the check above catches what it is for.
func TestUnnamedFindsNumbers(t *testing.T) {
	body := "f() {\n  run \"$1\"\n}\nx=$2 y=${12}\n[ -f \"$x\" ] || exit 3\ntrap 'exit 129' HUP\nrestore 22\nexit $EXIT_OK\nawk '{ print $0 }'\n"
	want := []string{"exit 3", "exit 1", "restore 2", "$2", "${12}"}
	if got := unnamed(body); !slices.Equal(got, want) {
		t.Fatalf("unnamed = %q, want %q", got, want)
	}
}

// TestExitCodesOneTable: each code has its own shell variable and says
// which step failed.
func TestExitCodesOneTable(t *testing.T) {
	seen := map[string]exitCode{}
	for code, m := range exitCodes {
		if other, ok := seen[m.shell]; ok {
			t.Errorf("%s names both %d and %d", m.shell, other, code)
		}
		seen[m.shell] = code
		if code != exitOK && (m.step == "" || m.left == "") {
			t.Errorf("%s (%d) does not say which step failed and what the host has", m.shell, code)
		}
	}
	if got, want := exitUpload.Error(), "upload failed: the previous file is untouched (exit status 11)"; got != want {
		t.Errorf("exitUpload.Error() = %q, want %q", got, want)
	}
	if got, want := exitCode(77).Error(), "exit status 77"; got != want {
		t.Errorf("exitCode(77).Error() = %q, want %q", got, want)
	}
}

// The parameters reach the script under their names, in order, past the
// ninth; bools as 1 and 0.
type probeArgs struct {
	A, B, C, D, E, F, G, H, I string `sh:"p"`
	Tenth                     string `sh:"tenth"`
	Flag                      bool   `sh:"flag"`
	Count                     int    `sh:"count"`
}

func TestScriptParametersByName(t *testing.T) {
	probe := newScript[probeArgs](`printf '%s|' "$tenth" "$flag" "$count" "$EXIT_UPLOAD" "$WORD_COMMIT"`)
	scripts = scripts[:len(scripts)-1] // not one of the engine's
	call := probe.with(probeArgs{I: "ninth", Tenth: "it's ten", Flag: true, Count: 42})
	out, err := exec.Command("sh", append([]string{"-c", call.text, "kha"}, call.args...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "it's ten|1|42|11|commit|"; got != want {
		t.Fatalf("the script saw %q, want %q", got, want)
	}
	if want := "\np=${1} p=${2} p=${3} p=${4} p=${5} p=${6} p=${7} p=${8} p=${9} tenth=${10} flag=${11} count=${12}\n"; !strings.Contains(call.text, want) {
		t.Fatalf("header lacks %q:\n%s", want, call.text)
	}
}
