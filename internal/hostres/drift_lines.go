package hostres

import (
	"context"
	"fmt"
	"strings"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// Bounds of what a drift warning shows of a file.
const (
	maxDriftLines     = 20   // changed lines shown
	maxDriftFileLines = 2000 // files longer are not compared line by line
)

// showsDrift says whether a model's drift may show file content.
func showsDrift(model any) bool {
	s, ok := model.(DriftShower)
	return ok && s.ShowsDrift()
}

// changedLines reads what the host has at f's path and lists the lines
// that differ from f's content: "-" what the configuration wants and the
// host lacks, "+" what the host has besides, at most maxDriftLines. It is
// "" when the file cannot be read or compared.
func changedLines(ctx context.Context, client Host, f remote.File) string {
	have, err := client.ReadFile(ctx, f.Path)
	if err != nil {
		return ""
	}
	return diffLines(string(f.Content), string(have))
}

// changedBlockLines lists the lines of the host's block (have, its
// markers included, as Observe reports it) that differ from b's.
func changedBlockLines(b remote.Block, have string) string {
	return diffLines(remote.BlockLines(b.Marker, string(b.Content)), have)
}

// diffLines lists the lines that differ between the configuration's text
// and the host's, at most maxDriftLines; "" when either is too long.
func diffLines(wantText, haveText string) string {
	want, got := lines(wantText), lines(haveText)
	if len(want) > maxDriftFileLines || len(got) > maxDriftFileLines {
		return ""
	}
	diff := lineDiff(want, got)
	if len(diff) > maxDriftLines {
		diff = append(diff[:maxDriftLines], fmt.Sprintf("… and %d more changed lines", len(diff)-maxDriftLines))
	}
	return strings.Join(diff, "\n")
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// lineDiff lists, in file order, the lines of want that got lacks ("- ")
// and the lines of got that want lacks ("+ "), over a longest common
// subsequence of the two.
func lineDiff(want, got []string) []string {
	// common[i][j] is the length of the longest common subsequence of
	// want[i:] and got[j:].
	common := make([][]int, len(want)+1)
	for i := range common {
		common[i] = make([]int, len(got)+1)
	}
	for i := len(want) - 1; i >= 0; i-- {
		for j := len(got) - 1; j >= 0; j-- {
			if want[i] == got[j] {
				common[i][j] = common[i+1][j+1] + 1
			} else {
				common[i][j] = max(common[i+1][j], common[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case i < len(want) && j < len(got) && want[i] == got[j]:
			i, j = i+1, j+1
		case i < len(want) && (j == len(got) || common[i+1][j] >= common[i][j+1]):
			out = append(out, "- "+want[i])
			i++
		default:
			out = append(out, "+ "+got[j])
			j++
		}
	}
	return out
}
