package remote

import (
	_ "embed"

	"context"
	"strings"
)

// serviceScript says whether a service runs (Service).
var serviceScript = newScript[serviceArgs](serviceBody)

//go:embed scripts/service.sh
var serviceBody string

// serviceArgs are serviceScript's parameters.
type serviceArgs struct {
	Unit    string `sh:"unit"`
	PIDFile string `sh:"pidfile"`
	Process string `sh:"process"`
	Command string `sh:"command"`
	Limit   int    `sh:"limit"`
}

// Service says how to tell whether a service kha configured runs: the
// user's Command (exit status 0: it runs), else the process its PIDFile
// names when that process is Process, else the systemd Unit.
type Service struct {
	Unit, PIDFile, Process, Command string
}

// ServiceState is what a host says of a Service: Known is false when
// nothing could tell (no systemd); Why says why it does not run.
type ServiceState struct {
	Known, Running bool
	Why            string
}

// ServiceState asks the host whether s runs. The answer is the host's
// text: only its first word is read as a verdict, and the reason is
// passed on as one line.
func (c *Client) ServiceState(ctx context.Context, s Service) (ServiceState, error) {
	c.log(ctx, LevelDebug, "asking whether the service runs", map[string]any{"unit": s.Unit, "pid_file": s.PIDFile,
		"running_command": s.Command != ""})
	stdout, stderr, exit, err := c.script(ctx, serviceScript.with(serviceArgs{Unit: s.Unit, PIDFile: s.PIDFile, Process: s.Process,
		Command: s.Command, Limit: commandLimit(ctx)}), nil)
	if err == nil && exit != exitOK {
		err = c.sudoHint(string(stderr), exit)
	}
	if err != nil {
		return ServiceState{}, &StepError{Host: c.cfg.Address(), Step: StepRead, Path: "the service", Output: trimOutput(stderr), Err: err}
	}
	line, _, _ := strings.Cut(string(stdout), "\n")
	word, why, _ := strings.Cut(line, " ")
	switch word {
	case wordRunning:
		return ServiceState{Known: true, Running: true}, nil
	case wordStopped:
		return ServiceState{Known: true, Why: OneLine(why)}, nil
	}
	return ServiceState{Why: OneLine(why)}, nil
}
