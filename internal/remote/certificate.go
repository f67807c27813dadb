package remote

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/kha/terraform-provider-kha/internal/certissue"
)

// IssuedCertificate is a serving certificate kha issues on the host, with
// a new key made there and signed there by the CA whose key never leaves
// the host (kubeadm's ca.key). Put issues one when the certificate on the
// host lacks what Want asks, swaps key and certificate in, runs
// ReloadCommand, and keeps them only when Check proves them served; else
// the previous pair goes back. Remove leaves the certificate as it is.
type IssuedCertificate struct {
	CertPath, KeyPath     string // the serving pair; one directory
	CACertPath, CAKeyPath string
	Want                  certissue.Want
	// ReloadCommand runs after the swap and after a rollback; empty for
	// an apiserver that reloads its serving certificate from disk.
	ReloadCommand string
	// LastSeen are the SANs the last refresh read on the host's
	// certificate (nil when none was read). With Want.KeepLiveSANs they are
	// part of what the certificate must have, so that dropping a SAN the
	// live certificate keeps changes no digest: the apply would issue
	// nothing for it.
	LastSeen *certissue.SANs
	// Check proves the certificate served; nil proves nothing.
	Check CertificateCheck
	// ConfirmWithin is how long the host waits for the verdict after the
	// swap and reload: past it (a lost connection the host did not notice), it puts
	// the previous pair back on its own.
	ConfirmWithin time.Duration
	// Turn, when set, is waited on before a certificate is issued and
	// swapped in (WithTurn).
	Turn Turn
}

// Turn waits until a change may start among the changes of its cluster,
// named by the digest of the cluster's CA certificate, and returns done,
// which reports whether the change failed after it touched the host. Its
// error is why the change may not start.
type Turn func(ctx context.Context, cluster string) (done func(failed bool), err error)

// Coordinated is an item whose changes wait their turn among the changes
// of their cluster (IssuedCertificate: never two apiservers without a
// proven certificate at once).
type Coordinated interface {
	Item
	WithTurn(Turn) Item
}

// WithTurn is f waiting on turn.
func (f IssuedCertificate) WithTurn(turn Turn) Item {
	f.Turn = turn
	return f
}

// CertificateCheck proves a certificate on the host's apiserver.
type CertificateCheck interface {
	// Serving waits until the host's apiserver serves cert.
	Serving(ctx context.Context, c *Client, cert *x509.Certificate) error
	// Verify proves cert, signed by ca, through every endpoint that
	// reaches the host's apiserver, verified as clients verify it.
	Verify(ctx context.Context, c *Client, cert, ca *x509.Certificate) error
}

// Place is the certificate's path.
func (f IssuedCertificate) Place() (path, marker string) { return f.CertPath, "" }

// Reload is f's ReloadCommand.
func (f IssuedCertificate) Reload() string { return f.ReloadCommand }

// want says what the certificate must have, for the digest.
func (f IssuedCertificate) want() string {
	sans, _, err := f.Want.Keeps(f.LastSeen)
	if err != nil {
		return "invalid SANs: " + err.Error()
	}
	s := "a certificate with " + strings.Join(sans.Strings(), ",")
	if !f.Want.KeepLiveSANs {
		s += " alone"
	}
	return s + " signed by " + f.CACertPath
}

// Digest is the digest of what the certificate must have.
func (f IssuedCertificate) Digest() string { return SHA256([]byte(f.want())) }

// Drift says what the host's certificate lacks.
func (f IssuedCertificate) Drift(o Observed) string {
	switch {
	case !o.Exists:
		return missing(f.CertPath, "certificate")
	case o.SHA256 == f.Digest() || o.State == "":
		return "" // nothing lacking: at most the live SANs kept changed
	}
	return f.CertPath + ": " + o.State
}

// observe reads the certificate and the CA's and says what the first
// lacks; nothing secret is read.
func (f IssuedCertificate) observe(ctx context.Context, c *Client) (Observed, error) {
	live, ca, err := f.read(ctx, c)
	if err != nil || live == nil {
		return Observed{}, err
	}
	// A renewal that is due is the plan's to judge, with the planned
	// renew_before (kha_apiserver_serving_certificate's not_after): no
	// change made outside Terraform.
	now := time.Now()
	seen := certissue.SANsOf(live)
	f.LastSeen = &seen
	o := Observed{Exists: true, SHA256: f.Digest()}
	if lacks := certissue.Lacks(live, ca, f.Want, now); lacks != "" {
		o.SHA256, o.State = SHA256([]byte(lacks)), "the certificate "+lacks
	}
	if notices := certissue.Notices(live, ca, f.Want, now); len(notices) > 0 {
		o.Notice = Notice{Summary: "Certificate Expiring Without Renewal", Detail: f.CertPath + ": " + strings.Join(notices, " ")}
	}
	return o, nil
}

// read returns the certificate on the host (nil when there is none) and
// the CA's.
func (f IssuedCertificate) read(ctx context.Context, c *Client) (live, ca *x509.Certificate, err error) {
	parse := func(path string) (*x509.Certificate, error) {
		text, err := c.ReadFile(ctx, path)
		if err != nil {
			return nil, err
		}
		cert, err := certissue.ParsePEM(text)
		if err != nil {
			return nil, &StepError{Host: c.cfg.Address(), Step: StepRead, Path: path, Err: err}
		}
		return cert, nil
	}
	if ca, err = parse(f.CACertPath); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = &StepError{Host: c.cfg.Address(), Step: StepRead, Path: f.CACertPath, Err: errors.New("the CA certificate " +
				"is not on the host: the certificate is issued on the node with its CA (kubeadm's ca.crt and ca.key)")}
		}
		return nil, nil, err
	}
	if live, err = parse(f.CertPath); errors.Is(err, fs.ErrNotExist) {
		return nil, ca, nil
	}
	return live, ca, err
}

// remove leaves the certificate in place: a certificate kha stops
// managing (a changed certificate_path) stays, as clients rely on it.
//
//nolint:unparam // Item's signature: removing the other items can fail
func (f IssuedCertificate) remove(ctx context.Context, c *Client, _ string) error {
	c.log(ctx, LevelInfo, "the certificate stays in place", map[string]any{"path": f.CertPath})
	return nil
}

// put issues and swaps in a certificate when the host's lacks what f
// wants, after its Turn; see IssuedCertificate.
func (f IssuedCertificate) put(ctx context.Context, c *Client) (Outcome, error) {
	live, ca, err := f.read(ctx, c)
	if err != nil {
		return Outcome{}, err
	}
	now := time.Now()
	if live != nil && certissue.Lacks(live, ca, f.Want, now) == "" && certissue.Due(live, ca, f.Want, now) == "" {
		c.log(ctx, LevelDebug, "the certificate has what it should: nothing issued", map[string]any{"path": f.CertPath})
		return Outcome{Unchanged: true}, nil
	}
	serial := make([]byte, 16)
	_, _ = rand.Read(serial)
	serial[0] &= 0x7f // positive
	issue, err := certissue.Plan(f.Want, live, ca, now, hex.EncodeToString(serial))
	if err != nil {
		return Outcome{}, &StepError{Host: c.cfg.Address(), Step: "plan the certificate", Path: f.CertPath, Err: err}
	}
	if len(issue.Dropped) > 0 {
		c.log(ctx, LevelWarn, "the live certificate's SANs that are not DNS names are left out", map[string]any{
			"path": f.CertPath, "dropped": fmt.Sprintf("%q", issue.Dropped)}) // quoted: the host's text
	}
	done := func(bool) {}
	if f.Turn != nil {
		c.log(ctx, LevelDebug, "waiting for the cluster's other certificate changes", map[string]any{"path": f.CertPath})
		if done, err = f.Turn(ctx, SHA256(ca.Raw)); err != nil {
			return Outcome{}, &StepError{Host: c.cfg.Address(), Step: "wait for the cluster's other nodes", Path: f.CertPath, Err: err}
		}
	}
	s := &certSession{ctx: ctx, c: c, f: f, issue: issue, live: live, ca: ca}
	err = s.run()
	done(err != nil && s.swapped)
	return Outcome{}, err
}

// certSession is one run of certScript.
type certSession struct {
	*conversation
	ctx      context.Context
	c        *Client
	f        IssuedCertificate
	issue    certissue.Issue
	live, ca *x509.Certificate
	issued   *x509.Certificate
	// swapped: the new pair went in place (whatever happened after).
	swapped bool
}

func (s *certSession) fields() map[string]any {
	return map[string]any{"path": s.f.CertPath, "sans": strings.Join(s.issue.SANs.Strings(), ","), "algorithm": s.issue.Algorithm,
		"days": s.issue.Days}
}

func (s *certSession) fail(step Step, err error) error {
	s.c.log(s.ctx, LevelWarn, string(step)+" failed", map[string]any{"path": s.f.CertPath, "error": err.Error()})
	output := ""
	if s.conversation != nil {
		output = trimOutput(s.stderr.Bytes())
	}
	return &StepError{Host: s.c.cfg.Address(), Step: step, Path: s.f.CertPath, Output: output, Err: s.c.sudoHint(output, err)}
}

// errGaveUp means the operation's time ran out while the host did not
// answer (a partition neither end noticed).
var errGaveUp = errors.New("the host did not answer within the operation's timeout")

// await runs a blocking step of the conversation, giving up when the
// operation's time runs out: a session on a host that stopped answering
// never ends by itself.
func await[T any](ctx context.Context, step func() T) (T, error) {
	out := make(chan T, 1)
	go func() { out <- step() }()
	select {
	case v := <-out:
		return v, nil
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("%w (%v)", errGaveUp, ctx.Err())
	}
}

// readLine is the script's next line ("" at its end).
func (s *certSession) readLine() (string, error) {
	return await(s.ctx, func() string {
		line, _ := s.lines.ReadString('\n')
		return line
	})
}

// end waits for the script's end and says what its exit means; exit is
// its status (exitOK when none came).
func (s *certSession) end() (exitCode, error) {
	s.stdin.Close()
	err, gaveUp := await(s.ctx, s.session.Wait)
	if gaveUp != nil {
		err = gaveUp
	}
	if err == nil {
		return exitOK, nil
	}
	exit, ok := exitStatus(err)
	if !ok {
		what := "nothing was changed"
		if s.swapped {
			what = fmt.Sprintf("the host puts the previous certificate back unless kha confirmed the new one, at the latest "+
				"%s after the swap and the reload command", s.f.ConfirmWithin)
		}
		return exitOK, s.fail("run", fmt.Errorf("the connection was lost (%v); %s", err, what))
	}
	meaning, ok := exitCodes[exit]
	if !ok {
		meaning = exitMeaning{step: "issue", left: fmt.Sprintf("exit status %d", exit)}
	}
	return exit, s.fail(meaning.step, errors.New(meaning.left))
}

func (s *certSession) run() error {
	s.c.log(s.ctx, LevelInfo, "issuing the certificate on the host", s.fields())
	conv, err := s.c.converse(s.ctx, certScript.with(certArgs{Target: s.f.CertPath, Key: s.f.KeyPath, CACert: s.f.CACertPath,
		CAKey: s.f.CAKeyPath, Algorithm: s.issue.Algorithm, Subject: s.issue.Subject(), Extensions: s.issue.Extensions(),
		Serial: s.issue.Serial, Days: s.issue.Days, Reload: s.f.ReloadCommand, Confirm: int(s.f.ConfirmWithin.Seconds()),
		Limit: commandLimit(s.ctx), Rand: randomSuffix()}), nil)
	if err != nil {
		return s.fail("run", err)
	}
	s.conversation = conv
	defer conv.release()
	// The new certificate (public) comes before the word.
	var pemText strings.Builder
	for {
		line, err := s.readLine()
		if err != nil || line == "" {
			_, err := s.end()
			return err
		}
		if line == wordReady+"\n" {
			break
		}
		pemText.WriteString(line)
	}
	if s.issued, err = certissue.ParsePEM([]byte(pemText.String())); err == nil {
		err = s.issue.Check(s.issued, s.ca)
	}
	if err != nil {
		s.session.Close() // no commit: the host is unchanged
		return s.fail("check the issued certificate", fmt.Errorf("%w; nothing was changed", err))
	}
	if _, err := io.WriteString(s.stdin, wordCommit+"\n"); err != nil {
		return s.fail("commit", fmt.Errorf("%w: %v", ErrNotCommitted, err))
	}
	s.swapped = true
	if line, _ := s.readLine(); line != wordReloaded+"\n" {
		_, err := s.end() // the swap or the reload failed: the script put the previous pair back
		return err
	}
	start := time.Now()
	s.c.log(s.ctx, LevelInfo, "in place; waiting until the apiserver serves it", map[string]any{"path": s.f.CertPath})
	verr := s.prove()
	verdict := wordKeep
	if verr != nil {
		verdict = wordRollback
		s.c.log(s.ctx, LevelWarn, "not proven; putting the previous certificate back", map[string]any{"path": s.f.CertPath, "error": verr.Error()})
	} else {
		s.c.log(s.ctx, LevelInfo, "served and verified", map[string]any{"path": s.f.CertPath, "took": time.Since(start).String()})
	}
	_, _ = io.WriteString(s.stdin, verdict+"\n")
	exit, endErr := s.end()
	if verr == nil {
		return endErr
	}
	if exit != exitVerify {
		return s.fail(StepVerify, fmt.Errorf("%v; putting the previous certificate back: %v", verr, endErr))
	}
	return s.fail(StepVerify, fmt.Errorf("%v; %s", verr, s.servingPrevious()))
}

// prove checks the issued certificate, if f has a check.
func (s *certSession) prove() error {
	if s.f.Check == nil {
		return nil
	}
	if err := s.f.Check.Serving(s.ctx, s.c, s.issued); err != nil {
		return err
	}
	return s.f.Check.Verify(s.ctx, s.c, s.issued, s.ca)
}

// servingPrevious says whether the apiserver serves the previous
// certificate again after a rollback.
func (s *certSession) servingPrevious() string {
	if s.f.Check == nil || s.live == nil {
		return "the previous certificate and key were put back"
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 2*time.Minute)
	defer cancel()
	if err := s.f.Check.Serving(ctx, s.c, s.live); err != nil {
		return "the previous certificate and key were put back, but the apiserver does not serve the previous certificate: " + err.Error()
	}
	return "the previous certificate and key were put back, and the apiserver serves the previous certificate again"
}
