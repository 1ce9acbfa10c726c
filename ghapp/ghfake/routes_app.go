package ghfake

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Delivery is one delivery of the App's webhook.
type Delivery struct {
	ID             int64
	GUID           string
	Event, Action  string
	Status         string
	StatusCode     int
	DeliveredAt    time.Time
	Redelivery     bool
	InstallationID int64
	RepositoryID   int64
}

// manifestCode is a code from the App manifest flow, convertible once.
type manifestCode struct {
	webhookSecret string
	used          bool
}

func (f *Fake) routeApp(mux *http.ServeMux) {
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", f.appAuth(f.issueToken))
	mux.HandleFunc("GET /app", f.appAuth(f.getApp))
	mux.HandleFunc("GET /app/hook/deliveries", f.appAuth(f.listDeliveries))
	mux.HandleFunc("POST /app/hook/deliveries/{id}/attempts", f.appAuth(f.redeliver))
	mux.HandleFunc("POST /app-manifests/{code}/conversions", f.convertManifest)
}

func (f *Fake) getApp(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"id":       f.appID,
		"slug":     f.slug,
		"name":     f.slug,
		"owner":    f.userJSON("agentfix-owner"),
		"html_url": f.srv.URL + "/apps/" + f.slug,
		"permissions": map[string]string{
			"contents": "write", "issues": "write", "pull_requests": "write", "checks": "write", "metadata": "read",
		},
		"events": []string{"issues", "issue_comment", "pull_request_review", "pull_request_review_comment"},
	})
}

// AddDelivery records a webhook delivery (ID assigned when 0, DeliveredAt
// defaulting to now) and returns its id.
func (f *Fake) AddDelivery(d Delivery) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d.ID == 0 {
		d.ID = f.newID()
	}
	if d.DeliveredAt.IsZero() {
		d.DeliveredAt = time.Now()
	}
	f.deliveries = append(f.deliveries, &d)
	return d.ID
}

// Deliveries returns the recorded deliveries, redeliveries included, oldest
// first.
func (f *Fake) Deliveries() []Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Delivery
	for _, d := range f.deliveries {
		out = append(out, *d)
	}
	return out
}

// Redeliveries returns the ids of the deliveries the App asked to redeliver,
// in order.
func (f *Fake) Redeliveries() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.redeliveries...)
}

// listDeliveries serves GET /app/hook/deliveries: newest first, paginated
// with an opaque cursor as GitHub does.
func (f *Fake) listDeliveries(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per <= 0 {
		per = 30
	}
	per = min(per, 100)
	f.mu.Lock()
	defer f.mu.Unlock()
	all := slices.Clone(f.deliveries)
	slices.SortFunc(all, func(a, b *Delivery) int {
		if c := b.DeliveredAt.Compare(a.DeliveredAt); c != 0 {
			return c
		}
		return int(b.ID - a.ID)
	})
	start := 0
	if c := q.Get("cursor"); c != "" {
		id, err := strconv.ParseInt(strings.TrimPrefix(c, "v1_"), 10, 64)
		start = slices.IndexFunc(all, func(d *Delivery) bool { return d.ID == id })
		if err != nil || start < 0 {
			writeError(w, http.StatusUnprocessableEntity, "Invalid cursor")
			return
		}
	}
	end := min(start+per, len(all))
	if end < len(all) {
		v := url.Values{"per_page": {strconv.Itoa(per)}, "cursor": {fmt.Sprintf("v1_%d", all[end].ID)}}
		u := url.URL{Scheme: "http", Host: r.Host, Path: BasePath + r.URL.Path, RawQuery: v.Encode()}
		w.Header().Set("Link", fmt.Sprintf("<%s>; rel=\"next\"", u.String()))
	}
	out := []any{}
	for _, d := range all[start:end] {
		out = append(out, map[string]any{
			"id": d.ID, "guid": d.GUID, "event": d.Event, "action": d.Action,
			"status": d.Status, "status_code": d.StatusCode, "delivered_at": ts(d.DeliveredAt),
			"redelivery": d.Redelivery, "installation_id": d.InstallationID, "repository_id": d.RepositoryID,
		})
	}
	writeJSON(w, http.StatusOK, out)
}

// redeliver serves POST /app/hook/deliveries/{id}/attempts: it records the
// attempt and a new delivery with the same GUID, marked as a redelivery and
// answered OK.
func (f *Fake) redeliver(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.deliveries, func(d *Delivery) bool { return d.ID == id })
	if i < 0 {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	f.redeliveries = append(f.redeliveries, id)
	d := *f.deliveries[i]
	d.ID, d.Redelivery, d.Status, d.StatusCode, d.DeliveredAt = f.newID(), true, "OK", http.StatusAccepted, time.Now()
	f.deliveries = append(f.deliveries, &d)
	writeJSON(w, http.StatusAccepted, map[string]any{})
}

// ManifestConversion is what converting a manifest code answers: the App's
// credentials, which are the fake App's own, so a bot set up through the
// manifest flow talks to this fake.
type ManifestConversion struct {
	ID            int64
	Slug          string
	PEM           string
	WebhookSecret string
}

// AddManifestCode makes code convertible, once, into the fake App's
// credentials with a fresh webhook secret, which it returns.
func (f *Fake) AddManifestCode(code string) ManifestConversion {
	buf := make([]byte, 20)
	if _, err := rand.Read(buf); err != nil {
		f.fatalf("webhook secret: %v", err)
	}
	secret := hex.EncodeToString(buf)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.manifests[code] = &manifestCode{webhookSecret: secret}
	return ManifestConversion{ID: f.appID, Slug: f.slug, PEM: string(f.keyPEM), WebhookSecret: secret}
}

// convertManifest serves POST /app-manifests/{code}/conversions; it needs no
// authentication, and a code converts once (then 404, as GitHub answers for
// a used or expired code).
func (f *Fake) convertManifest(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.manifests[r.PathValue("code")]
	if m == nil || m.used {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	m.used = true
	writeJSON(w, http.StatusCreated, map[string]any{
		"id":             f.appID,
		"slug":           f.slug,
		"name":           f.slug,
		"owner":          f.userJSON("agentfix-owner"),
		"html_url":       f.srv.URL + "/apps/" + f.slug,
		"client_id":      "Iv1.fake" + strconv.FormatInt(f.appID, 10),
		"client_secret":  "fake-client-secret",
		"webhook_secret": m.webhookSecret,
		"pem":            string(f.keyPEM),
	})
}
