package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"regexp"
	"time"

	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/jobs"
	"github.com/google/go-github/v66/github"
)

// submitTimeout bounds the claim and the enqueue of one delivery. They run
// on a context detached from the request, so a client that hangs up cannot
// leave a delivery half enqueued.
const submitTimeout = 10 * time.Second

// deliveryID is the form of X-GitHub-Delivery (a GUID on github.com).
var deliveryID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// response is the JSON body of a 202.
type response struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// serveWebhook checks, in order, the body size (413), the signature (401),
// the headers and JSON (400), then routes, claims and enqueues (503 when the
// queue is unavailable) and answers 202. The declared size and the
// signature header's form are checked before the body is read; the body's
// memory is booked as its bytes arrive, against the budget of all bodies in
// flight and the share of the client (503 beyond either, which GitHub's
// redelivery, or the sweeper, repeats); and it must arrive by its deadline
// (408). So unsigned, large or slow requests cannot exhaust the edge's
// memory or hold back the deliveries of others.
func (s *Server) serveWebhook(w http.ResponseWriter, r *http.Request) {
	event := github.WebHookType(r)
	label := event
	if _, ok := s.handlers[event]; !ok {
		label = eventOther
	}
	log := s.log.With(logattr.Event, label, logattr.DeliveryID, truncate(github.DeliveryID(r), 128))

	d, dec, rf := s.receive(w, r, log)
	if rf != nil {
		s.refuse(w, log, label, *rf)
		return
	}
	log = log.With(dec.logAttrs()...)
	if dec.ignore != "" {
		s.accept(w, log, label, response{Status: outcomeIgnored, Reason: dec.ignore})
		return
	}
	resp, err := s.submit(r.Context(), log, d, dec)
	if err != nil {
		s.fail(w, log, label, http.StatusServiceUnavailable, outcomeUnavailable, "queue unavailable, try again")
		log.Error("enqueue failed", logattr.Err, err)
		return
	}
	s.accept(w, log, label, resp)
}

// refusal is an answer other than 202 that receive decided.
type refusal struct {
	code    int
	outcome string
	msg     string
	// hangUp closes the connection after the answer: the body was not
	// read to its end.
	hangUp bool
}

// receive reads, verifies and decodes one delivery. Everything the body
// booked is given back before it returns, so an answer is written only
// once the request holds no memory of the budget.
func (s *Server) receive(w http.ResponseWriter, r *http.Request, log *slog.Logger) (delivery, decision, *refusal) {
	tooLarge := &refusal{code: http.StatusRequestEntityTooLarge, outcome: outcomeTooLarge, msg: fmt.Sprintf("body exceeds %d bytes", MaxBodyBytes)}
	if r.ContentLength > MaxBodyBytes {
		return delivery{}, decision{}, tooLarge
	}
	sum, err := parseSignature(r.Header.Get(signatureHeader))
	if err != nil {
		return delivery{}, decision{}, &refusal{code: http.StatusUnauthorized, outcome: outcomeUnauthorized, msg: err.Error()}
	}
	h := s.inflight.hold(clientOf(r.RemoteAddr))
	defer h.release()
	setDeadline := s.readDeadline(w, log)
	body, err := readBody(r.Body, r.ContentLength, h, s.bodyClock(), setDeadline)
	var timeout interface{ Timeout() bool }
	switch {
	case err == nil:
		// The rest of the request is the server's again.
		_ = setDeadline(time.Time{})
	case errors.Is(err, errTooLarge):
		tooLarge.hangUp = true
		return delivery{}, decision{}, tooLarge
	case errors.Is(err, errBudgetFull), errors.Is(err, errClientShare):
		return delivery{}, decision{}, &refusal{code: http.StatusServiceUnavailable, outcome: outcomeOverloaded, msg: err.Error(), hangUp: true}
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &timeout) && timeout.Timeout():
		msg := fmt.Sprintf("body not received in time (%s, plus %s per MiB received)", s.bodyTimeout, s.bodyTimeoutPerMiB)
		return delivery{}, decision{}, &refusal{code: http.StatusRequestTimeout, outcome: outcomeBodyTimeout, msg: msg, hangUp: true}
	default:
		return delivery{}, decision{}, &refusal{code: http.StatusBadRequest, outcome: outcomeBadRequest, msg: "read body: " + err.Error(), hangUp: true}
	}
	if err := verifySignature(s.secret, body, sum); err != nil {
		return delivery{}, decision{}, &refusal{code: http.StatusUnauthorized, outcome: outcomeUnauthorized, msg: err.Error()}
	}
	d, err := checkHeaders(r)
	if err != nil {
		return delivery{}, decision{}, &refusal{code: http.StatusBadRequest, outcome: outcomeBadRequest, msg: err.Error()}
	}
	dec, err := s.decide(d, body)
	if err != nil {
		return delivery{}, decision{}, &refusal{code: http.StatusBadRequest, outcome: outcomeBadRequest, msg: err.Error()}
	}
	return d, dec, nil
}

// bodyClock starts the deadline of a body now.
func (s *Server) bodyClock() bodyClock {
	return bodyClock{start: time.Now(), floor: s.bodyTimeout, perMiB: s.bodyTimeoutPerMiB}
}

// readDeadline returns the function that sets the read deadline of w's
// connection. Where w cannot (a ResponseWriter wrapped without Unwrap),
// bodies are read without their deadline, which is logged once.
func (s *Server) readDeadline(w http.ResponseWriter, log *slog.Logger) func(time.Time) error {
	rc := http.NewResponseController(w)
	return func(t time.Time) error {
		err := rc.SetReadDeadline(t)
		if errors.Is(err, http.ErrNotSupported) {
			s.noDeadline.Do(func() {
				log.Error("the connection's read deadline cannot be set (the ResponseWriter is wrapped without Unwrap): bodies are read without their deadline")
			})
			return nil
		}
		return err
	}
}

func (s *Server) refuse(w http.ResponseWriter, log *slog.Logger, label string, rf refusal) {
	if rf.hangUp {
		w.Header().Set("Connection", "close")
	}
	if rf.outcome == outcomeOverloaded {
		w.Header().Set("Retry-After", "1")
	}
	s.fail(w, log, label, rf.code, rf.outcome, rf.msg)
	if rf.outcome == outcomeOverloaded {
		log.Warn("delivery refused: the bodies in flight fill the edge's memory budget or the client's share of it", logattr.Outcome, outcomeOverloaded, logattr.Reason, rf.msg)
	}
}

// checkHeaders reads the delivery headers.
func checkHeaders(r *http.Request) (delivery, error) {
	d := delivery{id: github.DeliveryID(r), event: github.WebHookType(r)}
	switch {
	case d.event == "":
		return d, errors.New("missing X-GitHub-Event")
	case d.id == "":
		return d, errors.New("missing X-GitHub-Delivery")
	case !deliveryID.MatchString(d.id):
		return d, errors.New("malformed X-GitHub-Delivery")
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return d, errors.New("Content-Type must be application/json (set the webhook's content type to JSON)")
	}
	return d, nil
}

// decide asks the event's handler, which decodes the payload.
func (s *Server) decide(d delivery, body []byte) (decision, error) {
	h, ok := s.handlers[d.event]
	if !ok {
		if !json.Valid(body) {
			return decision{}, errors.New("malformed JSON")
		}
		return ignored("event %s is not handled", truncate(d.event, 64)), nil
	}
	dec, err := h.decide(d, body)
	if err != nil {
		return decision{}, fmt.Errorf("malformed %s payload: %w", d.event, err)
	}
	return dec, nil
}

// submit claims the delivery and enqueues its tasks. A failed enqueue
// releases the claim so GitHub's redelivery is handled.
func (s *Server) submit(ctx context.Context, log *slog.Logger, d delivery, dec decision) (response, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), submitTimeout)
	defer cancel()
	start := time.Now()
	defer func() { s.metrics.enqueue.Observe(time.Since(start).Seconds()) }()

	claimed, err := s.claims.claim(ctx, d.id)
	if err != nil {
		return response{}, err
	}
	if !claimed {
		return response{Status: outcomeDuplicate, Reason: "delivery already claimed"}, nil
	}
	reason, err := s.enqueue(ctx, dec)
	if errors.Is(err, jobs.ErrDuplicate) {
		return response{Status: outcomeDuplicate, Reason: "delivery already handled"}, nil
	}
	if err != nil {
		if rerr := s.claims.release(ctx, d.id); rerr != nil {
			log.Warn("claim not released; it expires by itself", logattr.Err, rerr)
		}
		return response{}, err
	}
	if err := s.claims.keep(ctx, d.id); err != nil {
		log.Warn("claim not kept; a redelivery would find the tasks by their ids", logattr.Err, err)
	}
	return response{Status: outcomeQueued, Reason: reason}, nil
}

// enqueue submits the decision's tasks and says what happened.
func (s *Server) enqueue(ctx context.Context, dec decision) (string, error) {
	switch {
	case dec.fix != nil:
		p := dec.fix
		outcome, err := s.queue.SubmitFix(ctx, *p)
		if err != nil {
			return "", err
		}
		if outcome == jobs.OutcomeAlreadyWorking {
			return fmt.Sprintf("already working on %s#%d", p.Repo.FullName, p.Number), nil
		}
		return fmt.Sprintf("fix of %s#%d queued", p.Repo.FullName, p.Number), nil
	case dec.revise != nil:
		p := dec.revise
		outcome, err := s.queue.SubmitRevise(ctx, *p)
		if err != nil {
			return "", err
		}
		if outcome == jobs.OutcomeFollowUpKept {
			return fmt.Sprintf("revision of %s#%d running; command kept for a follow-up round", p.Repo.FullName, p.Number), nil
		}
		return fmt.Sprintf("revision of %s#%d queued", p.Repo.FullName, p.Number), nil
	case dec.notice != nil:
		if err := s.queue.SubmitNotice(ctx, *dec.notice); err != nil {
			return "", err
		}
		return fmt.Sprintf("notice queued (%s)", dec.notice.Outcome), nil
	case dec.cancel != nil:
		if err := s.queue.SubmitCancel(ctx, *dec.cancel); err != nil {
			return "", err
		}
		return fmt.Sprintf("cancel queued (%s)", dec.cancel.Reason), nil
	case dec.checks != nil:
		p := dec.checks
		if err := s.queue.SubmitChecks(ctx, *p); err != nil {
			return "", err
		}
		return fmt.Sprintf("checks of %s@%.12s queued for %d pull requests", p.Repo.FullName, p.HeadSHA, len(p.PRs)), nil
	case dec.baseMoved != nil:
		p := dec.baseMoved
		if err := s.queue.SubmitBaseMoved(ctx, *p); err != nil {
			return "", err
		}
		return fmt.Sprintf("merge check of the pull requests into %s of %s queued", p.Branch, p.Repo.FullName), nil
	}
	return "", errors.New("empty decision")
}

func (s *Server) accept(w http.ResponseWriter, log *slog.Logger, event string, resp response) {
	s.metrics.deliveries.WithLabelValues(event, resp.Status).Inc()
	level := slog.LevelInfo
	if resp.Status == outcomeIgnored {
		level = slog.LevelDebug
	}
	log.Log(context.Background(), level, "delivery "+resp.Status, logattr.Outcome, resp.Status, logattr.Reason, resp.Reason)
	writeJSON(w, http.StatusAccepted, resp)
}

func (s *Server) fail(w http.ResponseWriter, log *slog.Logger, event string, code int, outcome, msg string) {
	s.metrics.deliveries.WithLabelValues(event, outcome).Inc()
	if code != http.StatusServiceUnavailable {
		log.Warn("delivery refused", logattr.Outcome, outcome, logattr.Reason, msg)
	}
	writeJSON(w, code, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
