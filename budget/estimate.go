package budget

import "math"

// Call describes a model call about to be made, for an upper bound of its
// cost to reserve.
type Call struct {
	// InputTokens is the whole prompt of the call, cached parts included.
	// TextTokens bounds the tokens of text not yet counted by a model.
	InputTokens int64
	// MaxOutputTokens is the reply's token limit.
	MaxOutputTokens int64
	// InputPrice is the highest price an input token can be billed at
	// (the larger of the input and cache-write prices), OutputPrice the
	// output price; USD per million tokens, zero for an unpriced model.
	InputPrice, OutputPrice float64
}

// Estimate returns an upper bound of what c can cost: every input token at
// InputPrice (no cache discount) and a reply of MaxOutputTokens, in dollars
// rounded up to the micro-dollar, and in tokens.
func (c Call) Estimate() Amount {
	usd := (float64(c.InputTokens)*c.InputPrice + float64(c.MaxOutputTokens)*c.OutputPrice) / 1e6
	return Amount{USD: math.Ceil(usd*1e6) / 1e6, Tokens: c.InputTokens + c.MaxOutputTokens}
}

// TextTokens returns an upper bound of the tokens of s: its length in bytes.
// Byte-level BPE tokenizers, which the supported providers use, never make
// a token of less than one byte.
func TextTokens(s string) int64 { return int64(len(s)) }
