package fakeds

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Message is one chat message as the fake read it: the role and the text of
// its content (string content as is, the text parts of array content joined).
type Message struct {
	Role    string
	Content string
}

// Usage is the usage block DeepSeek returns: the cache split is top-level,
// and PromptCacheHitTokens + PromptCacheMissTokens = PromptTokens.
type Usage struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	PromptCacheHitTokens    int                      `json:"prompt_cache_hit_tokens"`
	PromptCacheMissTokens   int                      `json:"prompt_cache_miss_tokens"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// CompletionTokensDetails says how many completion tokens were reasoning.
type CompletionTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// chatRequest is the part of a chat completion request the fake reads.
type chatRequest struct {
	Model               string         `json:"model"`
	Messages            []wireMessage  `json:"messages"`
	ResponseFormat      *typeField     `json:"response_format"`
	Thinking            *typeField     `json:"thinking"`
	ReasoningEffort     string         `json:"reasoning_effort"`
	UserID              string         `json:"user_id"`
	MaxTokens           int            `json:"max_tokens"`
	MaxCompletionTokens int            `json:"max_completion_tokens"`
	Stream              bool           `json:"stream"`
	StreamOptions       map[string]any `json:"stream_options"`
	Tools               []wireTool     `json:"tools"`
}

// wireTool is one tool a request offers; the fake reads only its name.
type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// typeField is {"type": "..."}, the shape of response_format and thinking.
type typeField struct {
	Type string `json:"type"`
}

func (t *typeField) get() string {
	if t == nil {
		return ""
	}
	return t.Type
}

// completion is a non-streaming chat completion.
type completion struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	SystemFingerprint string   `json:"system_fingerprint"`
	Choices           []choice `json:"choices"`
	Usage             Usage    `json:"usage"`
}

type choice struct {
	Index        int          `json:"index"`
	Message      replyMessage `json:"message"`
	Logprobs     any          `json:"logprobs"`
	FinishReason string       `json:"finish_reason"`
}

type replyMessage struct {
	Role             string         `json:"role"`
	Content          string         `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
}

// wireToolCall is a tool call in an answer. In a stream the first chunk of
// a call has Index, ID, Type and the name; later ones only Index and more
// of the arguments, which the client appends.
type wireToolCall struct {
	Index    int          `json:"index"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// chunk is one streamed chat completion chunk.
type chunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           []chunkChoice `json:"choices"`
	Usage             *Usage        `json:"usage"`
}

type chunkChoice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	Logprobs     any     `json:"logprobs"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
}

// apiError is the error body DeepSeek and OpenAI send with a 4xx or 5xx.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// errorKinds gives each status the type and code the fake sends with it.
var errorKinds = map[int]struct{ typ, code, message string }{
	http.StatusBadRequest:          {"invalid_request_error", "invalid_request_error", "Invalid request body format"},
	http.StatusUnauthorized:        {"authentication_error", "invalid_api_key", "Authentication Fails, Your api key is invalid"},
	http.StatusPaymentRequired:     {"unknown_error", "insufficient_balance", "Insufficient Balance"},
	http.StatusNotFound:            {"invalid_request_error", "not_found", "Not Found"},
	http.StatusMethodNotAllowed:    {"invalid_request_error", "method_not_allowed", "Method Not Allowed"},
	http.StatusUnprocessableEntity: {"invalid_request_error", "invalid_parameter", "Invalid Parameters"},
	http.StatusTooManyRequests:     {"rate_limit_error", "rate_limit_exceeded", "Rate Limit Reached"},
	http.StatusInternalServerError: {"server_error", "server_error", "Server Error"},
	http.StatusServiceUnavailable:  {"server_error", "server_overloaded", "Server Overloaded, please try again later"},
}

// writeError sends an error in DeepSeek's shape; an empty message uses the
// status's usual one.
func writeError(w http.ResponseWriter, status int, message string, retryAfter int) {
	k := errorKinds[status]
	if message == "" {
		message = k.message
	}
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	body, _ := json.Marshal(map[string]apiError{"error": {Message: message, Type: k.typ, Code: k.code}})
	_, _ = w.Write(append(body, '\n'))
}
