package trace

// WordsPerID is the number of words AppendText writes for one hash id:
// about TokensPerID (512) tokens under cachekey/tokenizer's demo tokenizer,
// whose small vocabulary splits most words into two to four tokens.
const WordsPerID = 172

// AppendText appends the text hash id id expands to and returns the
// extended slice: WordsPerID words drawn from a fixed list of common
// English words by a mix of (id, j), in sentences of eight words, every
// word after a space. Like AppendTokens it is a pure function, so requests
// that share a prefix of hash ids share a prefix of text, and the texts of
// consecutive ids join at a word boundary (a space then a letter), where
// byte-level BPE pre-tokenizers split anyway: the tokens of a request's
// text are those of its ids' texts one after the other.
func AppendText(dst []byte, id uint64) []byte {
	base := mix64(id ^ 0xbb67ae8584caa73b)
	for j := uint64(0); j < WordsPerID; j++ {
		w := textWords[mix64(base+j*0x9e3779b97f4a7c15)%uint64(len(textWords))]
		dst = append(dst, ' ')
		if j%8 == 0 {
			dst = append(dst, w[0]-'a'+'A')
			dst = append(dst, w[1:]...)
		} else {
			dst = append(dst, w...)
		}
		if j%8 == 7 {
			dst = append(dst, '.')
		}
	}
	return dst
}

// textWords are the words AppendText draws from: lower case, ASCII.
var textWords = [...]string{
	"the", "router", "reads", "prompt", "turns", "into", "tokens", "and", "hashes", "block", "by", "pod", "that",
	"already", "holds", "longest", "prefix", "of", "those", "blocks", "in", "its", "cache", "can", "skip", "most",
	"prefill", "so", "request", "should", "go", "there", "unless", "is", "too", "busy", "cell", "keeps", "an",
	"exact", "index", "which", "global", "tier", "routes", "between", "cells", "tokenizer", "job", "produce",
	"same", "ids", "as", "engine", "if", "they", "differ", "one", "token", "every", "hash", "after", "it", "too",
	"would", "think", "nothing", "cached", "why", "we", "test", "carefully", "compare", "with", "reference",
	"better", "agree", "on", "input", "numbers", "like", "appear", "prompts", "do", "dates", "such", "times",
	"some", "users", "write", "other", "languages", "lines", "tabs", "double", "spaces", "matter", "fleet",
	"model", "server", "answer", "question", "time", "first", "second", "long", "short", "fast", "slow",
	"memory", "network", "region", "summary", "probe", "load", "queue", "batch", "decode", "stream", "event",
	"client", "user", "system", "assistant", "message", "history", "context", "window", "page", "table",
	"value", "key", "store", "write", "read", "order", "list", "set", "map", "line", "file", "code", "function",
	"return", "error", "result", "data", "state", "change", "update", "start", "stop", "run", "wait", "send",
	"receive", "build", "check", "find", "choose", "pick", "score", "filter", "cost", "weight", "share", "part",
	"whole", "small", "large", "new", "old", "good", "best", "next", "last", "each", "all", "many", "few",
}
