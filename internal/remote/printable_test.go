package remote

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestPrintable: text from a host reaches a terminal as text, lines and
// tabs kept; an escape sequence, a carriage return that would overwrite
// the line, or a direction override shows as its escape.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain\n\tindented":                  "plain\n\tindented",
		"\x1b[2K\rApply complete!":           `\x1b[2K\rApply complete!`,
		"bell\a and nul \x00":                `bell\a and nul \x00`,
		"rtl \u202eevil":                     `rtl \u202eevil`,
		"invalid \xff utf-8":                 "invalid \ufffd utf-8",
		"ünïcödé and emoji ✓":                "ünïcödé and emoji ✓",
		"c1 control \u009b31m":               `c1 control \u009b31m`,
		"line separator \u2028 and \u2029 x": `line separator \u2028 and \u2029 x`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
	err := &StepError{Host: "h:22", Step: "validate", Path: "/etc/x", Output: "\x1b]0;title\a", Err: errors.New("bad\rworse")}
	if got := err.Error(); strings.ContainsAny(got, "\x1b\a\r") {
		t.Errorf("a step's error carries the host's control characters: %q", got)
	}
}

func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"a\nb", "\x1b[31m", "\r", "\u202e", "\xff\xfe", "\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Printable(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Printable(%q) = %q is not UTF-8", s, got)
		}
		for _, r := range got {
			if r != '\n' && r != '\t' && (unicode.IsControl(r) || unicode.In(r, unicode.Bidi_Control) || r == '\u2028' || r == '\u2029') {
				t.Fatalf("Printable(%q) = %q keeps %U", s, got, r)
			}
		}
		if strings.Count(got, "\n") != strings.Count(s, "\n") {
			t.Fatalf("Printable(%q) = %q changes the lines", s, got)
		}
	})
}

// FuzzOneLine: the host's one-line text shows on one line, free of
// control characters, and plain text shows as itself.
func FuzzOneLine(f *testing.F) {
	for _, s := range []string{"https://10.0.0.11:6443", "a\nb", "\x1b[31m", "\r", "\u202e", "\u2028", "\xff", "ünï", `q"uote`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := OneLine(s)
		for _, r := range got {
			if unicode.IsControl(r) || unicode.In(r, unicode.Bidi_Control) || r == '\u2028' || r == '\u2029' {
				t.Fatalf("OneLine(%q) = %q keeps %U", s, got, r)
			}
		}
		if plain := strconv.Quote(s) == `"`+s+`"`; plain != (got == s) {
			t.Fatalf("OneLine(%q) = %q: plain text is shown bare, other text quoted", s, got)
		}
	})
}

// TestMissingProgramHint: a shell that cannot find a command's program
// makes the failure say so, for dash's and bash's wording, and nothing
// else does.
func TestMissingProgramHint(t *testing.T) {
	base := errors.New("validate failed")
	for output, program := range map[string]string{
		"sh: 1: haproxy: not found":                      "haproxy",
		"[WARNING] x\n/bin/sh: 1: keepalived: not found": "keepalived",
		"bash: line 1: nginx: command not found":         "nginx",
		"sh: 2: openssl: not found\n":                    "openssl",
		"[ALERT] cert.pem: not found":                    "",
		"haproxy: not found":                             "",
	} {
		err := missingProgramHint(output, base)
		switch {
		case !errors.Is(err, base):
			t.Errorf("%q: the failure is lost: %v", output, err)
		case program == "" && err.Error() != base.Error():
			t.Errorf("%q: hint where there is none: %v", output, err)
		case program != "" && !strings.HasPrefix(err.Error(), program+" is not installed on the host"):
			t.Errorf("%q: want %s named, got %v", output, program, err)
		}
	}
}
