package remote

import (
	_ "embed"

	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// Preflight runs a throwaway instance of a service on its new
// configuration, beside the live instance, before the configuration
// replaces the live one: what only a running service shows (a CA that
// signed none of the backends, a firewall in the way) stops the apply
// while the live service keeps serving on the previous configuration.
type Preflight struct {
	// Command runs the instance in the foreground, "%s" being the path of
	// its configuration, e.g. "haproxy -db -f %s". Without one, only the
	// Candidate's check runs.
	Command string
	// Candidate returns the instance's configuration and its check, given
	// the private directory the configuration goes into (for files the
	// instance writes, such as a PID file). An instance that exits before
	// it is checked (a port in use) is tried again with a new Candidate,
	// three times in all.
	Candidate func(dir string) (config []byte, check Verifier, err error)
	// Timeout bounds the check of an instance, which lives a little
	// longer; without Command, the check bounds itself.
	Timeout time.Duration
}

// preflightScript runs a throwaway instance. It reads the configuration
// from stdin into a private directory next to the target, starts the
// command on it (bounded by timeout(1), which takes the command's whole
// process group down; with the host's umask, as run in scriptHelpers
// runs commands), prints $WORD_STARTED, and stops the instance at the
// client's next line ($WORD_STOP) or when the client is gone. When the
// instance ends, it prints "$WORD_EXITED <status>" and the instance's
// output on stderr.
var preflightScript = newScript[preflightArgs](scriptHelpers + preflightBody)

//go:embed scripts/preflight.sh
var preflightBody string

// preflightArgs are preflightScript's parameters.
type preflightArgs struct {
	Target           string `sh:"target"`
	CreateParentDirs bool   `sh:"mkdirs"`
	Command          string `sh:"command"`    // run on "$KHA_CANDIDATE"
	Size             int    `sh:"size"`       // of the configuration on stdin
	Limit            int    `sh:"limit"`      // seconds the instance may run
	Rand             string `sh:"rand,stdin"` // suffix of the private directory
}

// errExitedEarly: the throwaway instance ended before its check passed.
var errExitedEarly = errors.New("the throwaway instance exited before it served")

// preflight runs f's throwaway instance until its check passes, or says
// why not. The host's files are not touched.
func (c *Client) preflight(ctx context.Context, f File, fail func(step Step, output string, err error) error) error {
	p := f.Preflight
	if p.Command == "" {
		// Nothing to start: the check alone.
		_, check, err := p.Candidate("")
		if err == nil {
			err = check.Verify(ctx, c)
		}
		if err != nil {
			return fail("check", "", fmt.Errorf("the new file would not work; it was not put in place: %w", err))
		}
		return nil
	}
	for attempt := 1; ; attempt++ {
		rnd := randomSuffix()
		config, check, err := p.Candidate(path.Join(path.Dir(f.Path), "."+path.Base(f.Path)+".kha-"+rnd))
		if err != nil {
			return fail(StepPreflight, "", err)
		}
		start := time.Now()
		c.log(ctx, LevelDebug, "starting a throwaway instance on the new configuration", map[string]any{"path": f.Path, "attempt": attempt})
		output, err := c.runPreflight(ctx, f, config, check, rnd)
		if err == nil {
			c.log(ctx, LevelDebug, "the throwaway instance served", map[string]any{"path": f.Path, "took": time.Since(start).String()})
			return nil
		}
		c.log(ctx, LevelWarn, "the throwaway instance did not serve", map[string]any{"path": f.Path, "error": err.Error()})
		if !errors.Is(err, errExitedEarly) || attempt == 3 || ctx.Err() != nil {
			return fail(StepPreflight, output, fmt.Errorf("the new configuration did not serve in a throwaway instance; "+
				"the live service and its configuration are untouched: %w", err))
		}
	}
}

// runPreflight runs one throwaway instance and returns its output.
func (c *Client) runPreflight(ctx context.Context, f File, config []byte, check Verifier, rnd string) (string, error) {
	args := preflightArgs{Target: f.Path, CreateParentDirs: f.CreateParentDirs, Size: len(config), Rand: rnd,
		Command: strings.ReplaceAll(f.Preflight.Command, "%s", `"$KHA_CANDIDATE"`),
		Limit:   int((f.Preflight.Timeout + 10*time.Second) / time.Second)}
	conv, err := c.converse(ctx, preflightScript.with(args), config)
	if err != nil {
		return "", err
	}
	defer conv.release()
	finish := func() (string, error) {
		conv.stdin.Close()
		_, _ = io.Copy(io.Discard, conv.lines)
		err := conv.session.Wait()
		if exit, ok := exitStatus(err); ok {
			err = exit
		}
		output := trimOutput(conv.stderr.Bytes())
		return output, c.sudoHint(output, err)
	}
	if line, _ := conv.lines.ReadString('\n'); line != wordStarted+"\n" {
		output, err := finish()
		if err == nil {
			err = errors.New("the host did not start the throwaway instance")
		}
		return output, err
	}
	// The instance may end on its own (a port in use): that ends the check.
	checkCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	exited := make(chan string, 1)
	go func() {
		line, _ := conv.lines.ReadString('\n')
		exited <- strings.TrimSpace(line)
		cancel()
	}()
	checkErr := check.Verify(checkCtx, c)
	select {
	case status := <-exited:
		output, _ := finish()
		return output, fmt.Errorf("%w (%s): %v", errExitedEarly, status, checkErr)
	default:
	}
	_, _ = io.WriteString(conv.stdin, wordStop+"\n")
	<-exited
	output, err := finish()
	if checkErr != nil {
		return output, checkErr
	}
	return "", err
}
