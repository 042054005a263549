package tokenizer

import "encoding/json"

// postProcessor holds the special tokens that the post-processor puts
// around a single sequence when special tokens are requested, such as BOS.
type postProcessor struct {
	prefix []uint32
	suffix []uint32
}

// parsePostProcessor turns tokenizer.json's post_processor into the ids
// added before and after a single sequence. It supports
// TemplateProcessing (one $A sequence), RobertaProcessing,
// BertProcessing, ByteLevel (which adds nothing to ids) and Sequence.
func parsePostProcessor(c *component) (postProcessor, error) {
	var pp postProcessor
	if c == nil {
		return pp, nil
	}
	switch c.Type {
	case "ByteLevel":
		return pp, nil
	case "Sequence":
		for i := range c.Processors {
			sub, err := parsePostProcessor(&c.Processors[i])
			if err != nil {
				return pp, err
			}
			pp.prefix = append(pp.prefix, sub.prefix...)
			pp.suffix = append(sub.suffix, pp.suffix...)
		}
		return pp, nil
	case "RobertaProcessing", "BertProcessing":
		cls, err := tokenPair(c.Cls, "cls")
		if err != nil {
			return pp, err
		}
		sep, err := tokenPair(c.Sep, "sep")
		if err != nil {
			return pp, err
		}
		return postProcessor{prefix: []uint32{cls}, suffix: []uint32{sep}}, nil
	case "TemplateProcessing":
		seen := false
		for _, item := range c.Single {
			switch {
			case item.Sequence != nil:
				if seen || item.Sequence.ID != "A" {
					return pp, unsupported("post_processor", "TemplateProcessing with a sequence other than one $A")
				}
				seen = true
			case item.SpecialToken != nil:
				st, ok := c.SpecialTokens[item.SpecialToken.ID]
				if !ok {
					return pp, invalid("post_processor special token " + item.SpecialToken.ID + " not in special_tokens")
				}
				if seen {
					pp.suffix = append(pp.suffix, st.IDs...)
				} else {
					pp.prefix = append(pp.prefix, st.IDs...)
				}
			default:
				return pp, invalid("post_processor template item is neither SpecialToken nor Sequence")
			}
		}
		if !seen {
			return pp, invalid("post_processor template has no $A sequence")
		}
		return pp, nil
	}
	return pp, unsupported("post_processor", c.Type)
}

// tokenPair decodes the ["<s>", 0] form of RobertaProcessing's cls and sep.
func tokenPair(raw json.RawMessage, field string) (uint32, error) {
	var pair []json.RawMessage
	if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
		return 0, invalid("post_processor " + field + " is not a [token, id] pair")
	}
	var id uint32
	if err := json.Unmarshal(pair[1], &id); err != nil {
		return 0, invalid("post_processor " + field + " id is not a token id")
	}
	return id, nil
}
