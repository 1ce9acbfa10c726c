package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// signatureHeader carries the HMAC-SHA256 of the body, "sha256=<hex>".
const signatureHeader = "X-Hub-Signature-256"

// parseSignature reads the header's HMAC. The edge calls it before reading
// the body, so a request that cannot be signed costs no more than its
// headers.
func parseSignature(header string) ([]byte, error) {
	if header == "" {
		return nil, errors.New("missing " + signatureHeader)
	}
	hexSum, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return nil, errors.New(signatureHeader + " is not sha256=<hex>")
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil || len(got) != sha256.Size {
		return nil, errors.New(signatureHeader + " is not sha256=<hex>")
	}
	return got, nil
}

// verifySignature checks got, the HMAC parseSignature read, against the
// HMAC-SHA256 of body under secret, in constant time.
func verifySignature(secret, body, got []byte) error {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return errors.New("signature does not match the webhook secret")
	}
	return nil
}

// sign returns the X-Hub-Signature-256 value of body under secret.
func sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}
