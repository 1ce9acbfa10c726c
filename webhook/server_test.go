package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentfix/agentfix/config"
	"github.com/agentfix/agentfix/internal/redistest"
	"github.com/agentfix/agentfix/jobs"
	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

const testSecret = "It's a Secret to Everybody"

// harness is the real router on a real redis-server.
type harness struct {
	redis     *redistest.Server
	rdb       *redis.Client
	inspector *asynq.Inspector
	srv       *Server
	http      *httptest.Server
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	return newHarnessLog(t, slog.New(slog.DiscardHandler))
}

// newHarnessLog is newHarness with the edge logging to log.
func newHarnessLog(t testing.TB, log *slog.Logger) *harness {
	t.Helper()
	return newHarnessWith(t, log)
}

// newHarnessOpts is newHarness with edited Options.
func newHarnessOpts(t testing.TB, edit func(*Options)) *harness {
	t.Helper()
	return newHarnessWith(t, slog.New(slog.DiscardHandler), edit)
}

func newHarnessWith(t testing.TB, log *slog.Logger, edit ...func(*Options)) *harness {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	cfg := config.Defaults()
	cfg.AppID, cfg.WebhookSecret = 42, testSecret
	o := Options{
		Config:   cfg,
		Redis:    rdb,
		Queue:    jobs.NewClient(rdb, cfg.MaxDuration),
		Registry: prometheus.NewRegistry(),
		Logger:   log,
	}
	for _, e := range edit {
		e(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{redis: srv, rdb: rdb, inspector: asynq.NewInspectorFromRedisClient(rdb), srv: s, http: httptest.NewServer(s.Handler())}
	t.Cleanup(h.http.Close)
	return h
}

// reply is one HTTP answer of the edge.
type reply struct {
	code       int
	body       response
	raw        string
	retryAfter string
}

// request sends body as a delivery with the given headers.
func (h *harness) request(t testing.TB, body []byte, header map[string]string) reply {
	t.Helper()
	return h.requestWith(t, h.http.Client(), body, header)
}

// requestWith is request through client.
func (h *harness) requestWith(t testing.TB, client *http.Client, body []byte, header map[string]string) reply {
	t.Helper()
	r, err := h.send(client, body, header)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// send is request for any goroutine: it returns its error.
func (h *harness) send(client *http.Client, body []byte, header map[string]string) (reply, error) {
	req, err := http.NewRequest(http.MethodPost, h.http.URL+"/webhook", bytes.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("POST /webhook: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{code: resp.StatusCode, raw: string(raw), retryAfter: resp.Header.Get("Retry-After")}
	_ = json.Unmarshal(raw, &r.body)
	return r, nil
}

// deliver sends a correctly signed delivery.
func (h *harness) deliver(t testing.TB, event, id string, body []byte) reply {
	t.Helper()
	return h.request(t, body, headers(event, id, sign([]byte(testSecret), body)))
}

func headers(event, id, signature string) map[string]string {
	m := map[string]string{"X-GitHub-Event": event, "X-GitHub-Delivery": id, "Content-Type": "application/json"}
	if signature != "" {
		m[signatureHeader] = signature
	}
	return m
}

func (h *harness) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := h.http.Client().Get(h.http.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// tasks returns the ids of the tasks in queue, in any state but completed.
func (h *harness) tasks(t *testing.T, queue string) []string {
	t.Helper()
	var ids []string
	for _, list := range []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){
		h.inspector.ListPendingTasks, h.inspector.ListActiveTasks, h.inspector.ListScheduledTasks,
		h.inspector.ListRetryTasks, h.inspector.ListArchivedTasks,
	} {
		infos, err := list(queue)
		if errors.Is(err, asynq.ErrQueueNotFound) {
			return nil
		}
		if err != nil {
			t.Fatalf("list %s: %v", queue, err)
		}
		for _, info := range infos {
			ids = append(ids, info.ID)
		}
	}
	return ids
}

func decodeTask[P jobs.Payload](t *testing.T, h *harness, queue, id string) P {
	t.Helper()
	info, err := h.inspector.GetTaskInfo(queue, id)
	if err != nil {
		t.Fatalf("get task %s: %v", id, err)
	}
	p, err := jobs.Decode[P](info.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLabelQueuesOneFix(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	got := h.deliver(t, "issues", "d-label", payload(t, "issues.labeled.json", set("label.name", "agent-fix")))
	if want := (reply{code: 202, body: response{Status: "queued", Reason: "fix of Codertocat/Hello-World#1 queued"}}); got.code != want.code || got.body != want.body {
		t.Fatalf("reply = %d %+v, want %d %+v", got.code, got.body, want.code, want.body)
	}
	if diff := cmp.Diff([]string{"fix:codertocat/hello-world#1"}, h.tasks(t, jobs.QueueAgent)); diff != "" {
		t.Errorf("agent tasks (-want +got):\n%s", diff)
	}
	wantFix := jobs.FixIssue{
		V: jobs.Version, DeliveryID: "d-label", Installation: testInstallation, Repo: helloWorld, Number: 1,
		Trigger:   jobs.Trigger{Kind: jobs.TriggerLabel, URL: "https://github.com/Codertocat/Hello-World/issues/1"},
		Requester: codertocat,
	}
	if diff := cmp.Diff(wantFix, decodeTask[jobs.FixIssue](t, h, jobs.QueueAgent, "fix:codertocat/hello-world#1")); diff != "" {
		t.Errorf("fix payload (-want +got):\n%s", diff)
	}
	wantNotice := jobs.Notice{
		V: jobs.Version, DeliveryID: "d-label", Installation: testInstallation, Repo: helloWorld, Number: 1,
		Trigger: wantFix.Trigger, Requester: codertocat, Outcome: jobs.OutcomeQueued, AgentTaskID: "fix:codertocat/hello-world#1",
	}
	if diff := cmp.Diff(wantNotice, decodeTask[jobs.Notice](t, h, jobs.QueueInteractive, "notice:d-label")); diff != "" {
		t.Errorf("notice payload (-want +got):\n%s", diff)
	}
}

// TestDeliveriesThatStartNothing sends deliveries that must be ignored and
// checks Redis holds no task afterwards.
func TestDeliveriesThatStartNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tests := []struct {
		name   string
		event  string
		file   string
		edits  []edit
		reason string
	}{
		{"wrong label", "issues", "issues.labeled.json", nil, `label "bug" is not the trigger label "agent-fix"`},
		{"quoted", "issue_comment", "issue_comment.created.json", []edit{body("> /agent-fix\nyes")}, "no /agent-fix command"},
		{"fenced", "issue_comment", "issue_comment.created.json", []edit{body("Run:\n```\n/agent-fix\n```")}, "no /agent-fix command"},
		{"mid-line", "issue_comment", "issue_comment.created.json", []edit{body("maybe /agent-fix it")}, "no /agent-fix command"},
		{"longer word", "issue_comment", "issue_comment.created.json", []edit{body("/agent-fixes")}, "no /agent-fix command"},
		{"bot sender", "issue_comment", "issue_comment.created.json", []edit{body("/agent-fix"), set("sender.type", "Bot")}, "sender Codertocat is a bot"},
		{"edited", "issue_comment", "issue_comment.edited.json", []edit{body("/agent-fix")}, "action edited is not a trigger (only created)"},
		{"unhandled event", "pull_request", "issues.labeled.json", nil, "event pull_request is not handled"},
		{"ping", "ping", "ping.json", nil, "pong (hook 109948940)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := h.deliver(t, tt.event, "d-"+strings.ReplaceAll(tt.name, " ", "-"), payload(t, tt.file, tt.edits...))
			want := response{Status: "ignored", Reason: tt.reason}
			if got.code != 202 || got.body != want {
				t.Errorf("reply = %d %+v, want 202 %+v", got.code, got.body, want)
			}
		})
	}
	if got := append(h.tasks(t, jobs.QueueAgent), h.tasks(t, jobs.QueueInteractive)...); len(got) != 0 {
		t.Errorf("tasks after ignored deliveries = %v, want none", got)
	}
	if keys := h.rdb.Keys(context.Background(), "agentfix:delivery:*").Val(); len(keys) != 0 {
		t.Errorf("claims after ignored deliveries = %v, want none", keys)
	}
}

func TestCommandCommentQueuesOneFix(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	got := h.deliver(t, "issue_comment", "d-cmd", payload(t, "issue_comment.created.json", body("/agent-fix please add a test")))
	if got.code != 202 || got.body.Status != "queued" {
		t.Fatalf("reply = %d %s, want 202 queued", got.code, got.raw)
	}
	if diff := cmp.Diff([]string{"fix:codertocat/hello-world#1"}, h.tasks(t, jobs.QueueAgent)); diff != "" {
		t.Errorf("agent tasks (-want +got):\n%s", diff)
	}
	if p := decodeTask[jobs.FixIssue](t, h, jobs.QueueAgent, "fix:codertocat/hello-world#1"); p.Instructions != "please add a test" || p.Trigger.CommentID != 492700400 {
		t.Errorf("fix payload instructions %q comment %d, want %q 492700400", p.Instructions, p.Trigger.CommentID, "please add a test")
	}
}

func TestSameDeliveryTwice(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := payload(t, "issue_comment.created.json", body("/agent-fix"))
	first, second := h.deliver(t, "issue_comment", "d-twice", b), h.deliver(t, "issue_comment", "d-twice", b)
	if first.body.Status != "queued" || second.body.Status != "duplicate" {
		t.Errorf("statuses = %q, %q; want queued, duplicate", first.body.Status, second.body.Status)
	}
	if got := len(h.tasks(t, jobs.QueueAgent)); got != 1 {
		t.Errorf("agent tasks = %d, want 1", got)
	}
	if got := len(h.tasks(t, jobs.QueueInteractive)); got != 1 {
		t.Errorf("notices = %d, want 1", got)
	}
}

func TestLabelAndCommandOnOneIssue(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	label := h.deliver(t, "issues", "d-a", payload(t, "issues.labeled.json", set("label.name", "agent-fix")))
	cmd := h.deliver(t, "issue_comment", "d-b", payload(t, "issue_comment.created.json", body("/agent-fix"), set("installation.id", testInstallation)))
	if label.body.Reason != "fix of Codertocat/Hello-World#1 queued" || cmd.body.Reason != "already working on Codertocat/Hello-World#1" {
		t.Errorf("reasons = %q, %q", label.body.Reason, cmd.body.Reason)
	}
	if got := h.tasks(t, jobs.QueueAgent); len(got) != 1 {
		t.Errorf("agent tasks = %v, want one", got)
	}
	for id, want := range map[string]jobs.Outcome{"d-a": jobs.OutcomeQueued, "d-b": jobs.OutcomeAlreadyWorking} {
		if n := decodeTask[jobs.Notice](t, h, jobs.QueueInteractive, jobs.NoticeTaskID(id)); n.Outcome != want {
			t.Errorf("notice of %s: outcome %q, want %q", id, n.Outcome, want)
		}
	}
}

func TestReviseAndNotices(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	botPR := []edit{set("pull_request.user.type", "Bot"), set("pull_request.user.login", "agentfix[bot]")}
	tests := []struct {
		event, id, file string
		edits           []edit
		reason          string
	}{
		{"pull_request_review", "d-r1", "pull_request_review.submitted.json", append([]edit{set("review.body", "/agent-fix")}, botPR...), "revision of Codertocat/Hello-World#2 queued"},
		{"pull_request_review_comment", "d-r2", "pull_request_review_comment.created.json", append([]edit{body("/agent-fix here too")}, botPR...), "revision of Codertocat/Hello-World#2 running; command kept for a follow-up round"},
		{"pull_request_review_comment", "d-r3", "pull_request_review_comment.created.json", []edit{body("/agent-fix")}, "notice queued (not_bots_pr)"},
		{"issue_comment", "d-r4", "issue_comment.created.json", []edit{body("/agent-fix help")}, "notice queued (help)"},
		{"installation", "d-r5", "installation.deleted.json", nil, "cancel queued (installation_deleted)"},
	}
	for _, tt := range tests {
		got := h.deliver(t, tt.event, tt.id, payload(t, tt.file, tt.edits...))
		if want := (response{Status: "queued", Reason: tt.reason}); got.code != 202 || got.body != want {
			t.Errorf("%s %s: reply = %d %+v, want 202 %+v", tt.event, tt.id, got.code, got.body, want)
		}
	}
	if diff := cmp.Diff([]string{"revise:codertocat/hello-world#2"}, h.tasks(t, jobs.QueueAgent)); diff != "" {
		t.Errorf("agent tasks (-want +got):\n%s", diff)
	}
	if got := len(h.tasks(t, jobs.QueueInteractive)); got != 5 {
		t.Errorf("interactive tasks = %d, want 5 (4 notices, 1 cancel)", got)
	}
}

func TestRefusedDeliveries(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	good := payload(t, "issues.labeled.json", set("label.name", "agent-fix"))
	huge := bytes.Repeat([]byte(" "), 26<<20)
	tests := []struct {
		name   string
		body   []byte
		header map[string]string
		code   int
		err    string
	}{
		{"no signature", good, headers("issues", "d1", ""), 401, "missing X-Hub-Signature-256"},
		{"malformed signature", good, headers("issues", "d1", "sha1=abc"), 401, "X-Hub-Signature-256 is not sha256=<hex>"},
		{"wrong secret", good, headers("issues", "d1", sign([]byte("another secret"), good)), 401, "signature does not match the webhook secret"},
		{"tampered body", append(bytes.Clone(good[:len(good)-1]), ' ', '}'), headers("issues", "d1", sign([]byte(testSecret), good)), 401, "signature does not match the webhook secret"},
		{"truncated json", good[:len(good)/2], headers("issues", "d1", sign([]byte(testSecret), good[:len(good)/2])), 400, "malformed issues payload: unexpected end of JSON input"},
		{"truncated json of another event", good[:10], headers("star", "d1", sign([]byte(testSecret), good[:10])), 400, "malformed JSON"},
		{"no event header", good, headers("", "d1", sign([]byte(testSecret), good)), 400, "missing X-GitHub-Event"},
		{"no delivery header", good, headers("issues", "", sign([]byte(testSecret), good)), 400, "missing X-GitHub-Delivery"},
		{"bad delivery header", good, headers("issues", "a b", sign([]byte(testSecret), good)), 400, "malformed X-GitHub-Delivery"},
		{"form content type", good, func() map[string]string {
			m := headers("issues", "d1", sign([]byte(testSecret), good))
			m["Content-Type"] = "application/x-www-form-urlencoded"
			return m
		}(), 400, "Content-Type must be application/json (set the webhook's content type to JSON)"},
		{"26 MiB", huge, headers("issues", "d1", sign([]byte(testSecret), huge)), 413, "body exceeds 26214400 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := h.request(t, tt.body, tt.header)
			var body struct{ Error string }
			_ = json.Unmarshal([]byte(got.raw), &body)
			if got.code != tt.code || body.Error != tt.err {
				t.Errorf("reply = %d %q, want %d %q", got.code, body.Error, tt.code, tt.err)
			}
		})
	}
	if got := append(h.tasks(t, jobs.QueueAgent), h.tasks(t, jobs.QueueInteractive)...); len(got) != 0 {
		t.Errorf("tasks after refused deliveries = %v, want none", got)
	}
	// The same delivery, signed, still works: nothing was claimed.
	if got := h.deliver(t, "issues", "d1", good); got.body.Status != "queued" {
		t.Errorf("valid delivery after refusals: %d %s, want queued", got.code, got.raw)
	}
}

func TestRedisDown(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	b := payload(t, "issue_comment.created.json", body("/agent-fix"))
	if code, _ := h.get(t, "/readyz"); code != 200 {
		t.Fatalf("/readyz with Redis up = %d, want 200", code)
	}
	h.redis.Stop()
	if got := h.deliver(t, "issue_comment", "d-down", b); got.code != 503 {
		t.Errorf("delivery with Redis down = %d %s, want 503", got.code, got.raw)
	}
	if code, _ := h.get(t, "/readyz"); code != 503 {
		t.Errorf("/readyz with Redis down = %d, want 503", code)
	}
	if code, _ := h.get(t, "/healthz"); code != 200 {
		t.Errorf("/healthz with Redis down = %d, want 200", code)
	}
	h.redis.Restart(t)
	if got := h.deliver(t, "issue_comment", "d-down", b); got.code != 202 || got.body.Status != "queued" {
		t.Errorf("redelivery with Redis back = %d %s, want 202 queued", got.code, got.raw)
	}
	if got := h.tasks(t, jobs.QueueAgent); len(got) != 1 {
		t.Errorf("agent tasks = %v, want one", got)
	}
}

// TestHalfFailedEnqueue makes the notice's enqueue fail after the agent
// task was written (Redis refuses the interactive queue's keys): the answer
// is 503, the claim is released, and GitHub's redelivery completes the
// delivery with exactly one agent task and one notice.
func TestHalfFailedEnqueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	b := payload(t, "issue_comment.created.json", body("/agent-fix"))
	acl := func(args ...any) {
		t.Helper()
		if err := h.rdb.Do(ctx, append([]any{"ACL", "SETUSER", "default"}, args...)...).Err(); err != nil {
			t.Fatalf("ACL SETUSER: %v", err)
		}
	}
	acl("resetkeys", "~agentfix:*", "~asynq:queues", "~asynq:{agent}:*")
	if got := h.deliver(t, "issue_comment", "d-half", b); got.code != 503 {
		t.Fatalf("delivery with the interactive queue refused = %d %s, want 503", got.code, got.raw)
	}
	if n := h.rdb.Exists(ctx, "agentfix:delivery:42:d-half").Val(); n != 0 {
		t.Errorf("claim still held after the failed enqueue")
	}
	acl("allkeys")
	if got := h.tasks(t, jobs.QueueInteractive); len(got) != 0 {
		t.Fatalf("notices after the failed enqueue = %v, want none", got)
	}
	if got := h.deliver(t, "issue_comment", "d-half", b); got.code != 202 || got.body.Status != "queued" {
		t.Errorf("redelivery = %d %s, want 202 queued", got.code, got.raw)
	}
	if got := h.tasks(t, jobs.QueueAgent); len(got) != 1 {
		t.Errorf("agent tasks = %v, want one", got)
	}
	if n := decodeTask[jobs.Notice](t, h, jobs.QueueInteractive, "notice:d-half"); n.Outcome != jobs.OutcomeQueued {
		t.Errorf("notice outcome = %q, want queued", n.Outcome)
	}
	if ttl := h.rdb.TTL(ctx, "agentfix:delivery:42:d-half").Val(); ttl < 71*time.Hour {
		t.Errorf("claim TTL after success = %s, want 72h", ttl)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	good := payload(t, "issues.labeled.json", set("label.name", "agent-fix"))
	h.deliver(t, "issues", "m1", good)
	h.deliver(t, "issues", "m1", good)
	h.request(t, good, headers("issues", "m2", ""))
	h.deliver(t, "acme/owner-repo", "m3", []byte("{}"))
	_, text := h.get(t, "/metrics")
	for _, want := range []string{
		`agentfix_webhook_deliveries_total{event="issues",outcome="queued"} 1`,
		`agentfix_webhook_deliveries_total{event="issues",outcome="duplicate"} 1`,
		`agentfix_webhook_deliveries_total{event="issues",outcome="unauthorized"} 1`,
		`agentfix_webhook_deliveries_total{event="other",outcome="ignored"} 1`,
		`agentfix_webhook_enqueue_duration_seconds_count 2`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(text, "Hello-World") || strings.Contains(text, "acme") {
		t.Errorf("/metrics carries repository names:\n%s", text)
	}
}

func TestNewRefusesEmptySecret(t *testing.T) {
	t.Parallel()
	cfg := config.Defaults()
	cfg.AppID = 42
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	_, err := New(Options{Config: cfg, Redis: rdb, Queue: jobs.NewClient(rdb, time.Hour), Registry: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "AGENTFIX_WEBHOOK_SECRET is empty") {
		t.Errorf("New with an empty secret: err = %v, want a refusal naming AGENTFIX_WEBHOOK_SECRET", err)
	}
}

func TestDeliveryLog(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer // written by the handler before the reply is read
	h := newHarnessLog(t, slog.New(slog.NewTextHandler(&buf, nil)))
	h.deliver(t, "issues", "d-log", payload(t, "issues.labeled.json", set("label.name", "agent-fix")))
	h.request(t, []byte("{}"), headers("issues", "d-bad", "sha256=00"))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=INFO msg="delivery queued" event=issues delivery_id=d-log installation_id=2311213 repo=Codertocat/Hello-World issue=1 outcome=queued reason="fix of Codertocat/Hello-World#1 queued"`,
		`level=WARN msg="delivery refused" event=issues delivery_id=d-bad outcome=unauthorized reason="X-Hub-Signature-256 is not sha256=<hex>"`,
	}
	if len(lines) != len(want) {
		t.Fatalf("log has %d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		if _, rest, _ := strings.Cut(lines[i], " "); rest != w { // drop time=
			t.Errorf("log line %d = %q, want %q", i, rest, w)
		}
	}
}

// TestTooLargeStreamed sends 26 MiB without a Content-Length (chunked): the
// cap stops the read at 25 MiB.
func TestTooLargeStreamed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	huge := bytes.Repeat([]byte(" "), 26<<20)
	req, err := http.NewRequest(http.MethodPost, h.http.URL+"/webhook", io.MultiReader(bytes.NewReader(huge)))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers("issues", "d-chunked", sign([]byte(testSecret), huge)) {
		req.Header.Set(k, v)
	}
	resp, err := h.http.Client().Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	if req.ContentLength != 0 || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked 26 MiB (content length %d): status %d, want 413", req.ContentLength, resp.StatusCode)
	}
}

// stalledRequest starts a delivery whose headers declare len(body) bytes,
// signed with sig, and whose body arrives only when the returned function
// is called; it returns the channel of the reply.
func (h *harness) stalledRequest(t *testing.T, id string, body []byte, sig string) (send func(), done <-chan reply) {
	t.Helper()
	pr, pw := io.Pipe()
	// A reply that waits for the body it never gets ends the test after
	// a while instead of hanging it.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.http.URL+"/webhook", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	for k, v := range headers("issues", id, sig) {
		req.Header.Set(k, v)
	}
	ch := make(chan reply, 1)
	go func() {
		resp, err := h.http.Client().Do(req)
		if err != nil {
			ch <- reply{raw: err.Error()}
			return
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		r := reply{code: resp.StatusCode, raw: string(raw)}
		_ = json.Unmarshal(raw, &r.body)
		ch <- r
	}()
	t.Cleanup(func() { pw.CloseWithError(errors.New("test over")) })
	return func() { _, _ = pw.Write(body); _ = pw.Close() }, ch
}

// TestUnsignedRefusedBeforeTheBody: a request without a usable signature
// header is answered 401 while its body has not even been sent.
func TestUnsignedRefusedBeforeTheBody(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	body := bytes.Repeat([]byte(" "), 20<<20)
	for _, sig := range []string{"", "sha1=abc"} {
		_, done := h.stalledRequest(t, "d-unsigned", body, sig)
		if got := <-done; got.code != http.StatusUnauthorized {
			t.Errorf("signature %q with the body held back: reply %d %s, want 401", sig, got.code, got.raw)
		}
	}
}
