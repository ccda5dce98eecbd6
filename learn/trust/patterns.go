package trust

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// The seed's patterns are JavaScript regular expressions. JavaScript's \s
// also matches Unicode spaces (U+3000, NBSP…) and its . and ^ treat \r,
// U+2028 and U+2029 as line ends; Go's do not. So \s is spelt out as JSSpace
// and line ends are unified before matching: a full-width space must not
// slip an "ignore previous instructions" past Go where it could not slip
// past the seed.
const JSSpace = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`

const sp = `[` + JSSpace + `]`

type instruction struct {
	name string
	re   *regexp.Regexp
	// keys: one must occur in the lower-cased text for re to run (nil: always).
	keys []string
}

func pattern(name, re string, keys ...string) instruction {
	return instruction{name: name, re: regexp.MustCompile(re), keys: keys}
}

// w is a run of spaces inside a phrase.
const w = sp + `+`

// injection starts with the seed's INJECTION_PATTERNS, all nine, in order,
// each with a name to record as the quarantine reason; mull's additions
// follow. The check reads the folded text (see fold), so each pattern is
// written for plain ASCII.
var injection = []instruction{
	pattern("ignore previous instructions", `(?i)ignore`+sp+`+(all`+sp+`+)?(previous|prior|above)`+sp+`+instructions?`, "ignore"),
	pattern("ignore previous instructions (zh)", `(忽略|无视|忘记)(之前|以上|上述|前面)?.{0,8}(指令|规则|要求|指示)`, "忽略", "无视", "忘记"),
	pattern("from now on you must only (zh)", `(从现在开始|接下来)你(必须|要|应该)只`, "从现在开始你", "接下来你"),
	pattern("execute immediately (zh)", `(务必|请)立即执行`, "立即执行"),
	pattern("fake system tag", `(?i)<`+sp+`*/?`+sp+`*(system|instruction|assistant)\b`, "<"),
	pattern("fake role line", `(?im)^(`+sp+`|[-*+>•])*(system|assistant)`+sp+`*:`, "system:", "system :", "system\t", "system  ", "assistant:", "assistant :", "assistant\t", "assistant  "),
	pattern("download piped to a shell", `(?i)(curl|wget|Invoke-WebRequest)[^\n]{0,200}\|`+sp+`*(ba|z|pw)?sh`, "|"),
	pattern("rm -rf /", `(?i)\brm`+sp+`+-rf`+sp+`+[/~]`, "-rf"),
	pattern("format a drive", `(?i)\bformat`+sp+`+[a-z]:`, "format"),

	// Overriding what the agent was told.
	pattern("disregard previous instructions", `(?i)\b(disregard|ignore|forget|override|neglect|discard|abandon)`+w+`((all|any|every|the|your|my|of|these|those|such)`+w+`)*(previous|prior|above|earlier|preceding|foregoing|former|original|initial|system|developer)`+w+`((and|or|&)`+w+`[a-z]+`+w+`)?(instructions?|prompts?|rules|directives?|directions|guidelines|commands|messages|context|orders|constraints|guidance|programming|restrictions)`,
		"disregard", "ignore", "forget", "override", "neglect", "discard", "abandon"),
	pattern("disregard previous instructions", `(?i)\b(disregard|ignore|forget)`+w+`((all|any|every|the|your)`+w+`)*(instructions|rules|guidelines)`+w+`(above|before|given|you('ve|`+w+`have|`+w+`were)`+w+`(been`+w+`)?(given|told))`,
		"disregard", "ignore", "forget"),
	pattern("disregard previous instructions", `(?i)\b(disregard|ignore)`+w+`(everything|all|anything)`+w+`(above|before|previously|prior|earlier|(you|that)`+w+`(were|was|have been|'ve been)`+w+`(told|given|said))`,
		"disregard", "ignore"),
	pattern("forget everything", `(?i)\bforget`+w+`(about`+w+`)?(everything|all|anything|what)`+w+`((that|of)`+w+`)?(above|before|previous(ly)?|prior|earlier|so far|(you|you've|i|we)`+w+`((were|was|have|had|'ve)`+w+`)?(been`+w+`)?(told|said|taught|instructed|given|learned|know))`,
		"forget"),
	pattern("forget everything", `(?i)\bforget`+w+`(all`+w+`)?(your|the)`+w+`((previous|prior|original|initial|current)`+w+`)?(instructions|rules|training|guidelines|programming|system prompt|directives)`,
		"forget"),
	pattern("new instructions", `(?i)\b(new|updated|real|actual|true|revised|hidden|secret|override|overriding|admin|developer|system)`+w+`(instructions?|directives?|orders|system`+w+`prompt|prompt|message)`+sp+`*[:：]`,
		"instruction", "directive", "orders", "prompt", "message"),
	pattern("new instructions", `(?i)\b(your|the)`+w+`(new|real|actual|true)`+w+`(instructions|task|orders|directive)`+w+`(is|are)\b`,
		"new instructions", "new task", "real task", "actual task", "true task", "real instructions", "actual instructions", "new orders", "new directive"),
	pattern("role override", `(?i)\byou`+w+`are`+w+`now`+w+`(a|an|my|the|no longer|free|unrestricted|unfiltered|uncensored|jailbroken|dan|in`+w+`(developer|god|dan|jailbreak|unrestricted|admin)`+w+`mode)\b`, "you are now"),
	pattern("role override", `(?i)\b(from`+w+`now`+w+`on|from`+w+`this`+w+`point`+w+`(on|forward)|henceforth),?`+w+`you`+w+`(only`+w+`)?(are|will|must|shall|should|have to|may|can only|answer|reply|respond|obey|ignore|act|speak|write|output)\b`, "from now on", "from this point", "henceforth"),
	pattern("role override", `(?i)\b(from`+w+`now`+w+`on|from`+w+`this`+w+`point`+w+`(on|forward)|henceforth),?`+w+`(only`+w+`)?(answer|reply|respond|obey|ignore|act`+w+`as|speak`+w+`only|output`+w+`only)\b`, "from now on", "from this point", "henceforth"),
	pattern("role override", `(?i)\b(act|behave|respond|answer)`+w+`as`+w+`(if|though)`+w+`you`+w+`(are|were|have|had)\b`, "as if", "as though"),
	pattern("role override", `(?i)\b(act|behave|pose|roleplay)`+w+`as`+w+`((an?|the|my)`+w+`)?(unrestricted|unfiltered|uncensored|jailbroken|evil|dan|different|new|system|root|admin|developer)\b`, "act as", "behave as", "pose as", "roleplay as"),
	pattern("role override", `(?i)\bpretend`+w+`(to`+w+`be|you`+w+`are|you're|that`+w+`you)\b`, "pretend"),
	pattern("role override", `(?i)\b(do anything now|developer mode (enabled|on|activated)|jailbreak mode|dan mode)\b`, "anything now", "mode"),
	pattern("secrecy from the user", `(?i)\b(do`+w+`not|don't|never)`+w+`(tell|inform|mention|reveal|show|let)\b[^\n]{0,20}\b(the`+w+`)?(user|human|operator)\b[^\n]{0,20}\b(about|that|this|know|what)\b`, "tell", "inform", "mention", "reveal", "show", "let"),
	pattern("reveal the prompt", `(?i)\b(reveal|print|show|output|repeat|leak|dump|disclose|display)`+w+`(me`+w+`)?(your|the)`+w+`(full`+w+`|entire`+w+`|hidden`+w+`|original`+w+`)?(system`+w+`prompt|initial`+w+`prompt|hidden`+w+`prompt|prompt|instructions)\b`, "prompt", "instructions"),
	pattern("exfiltration", `(?i)\b(send|post|upload|exfiltrate|email|forward|leak)\b[^\n]{0,60}(\.ssh|id_rsa|\.env\b|\.aws|credentials|secrets|api`+sp+`?keys?|tokens|passwords|private`+w+`keys?)\b[^\n]{0,40}\bto`+w+`(https?://|\S+@|\S+\.\S)`, "send ", "post ", "upload", "exfiltrate", "email ", "forward ", "leak "),

	pattern("disregard previous instructions", `(?i)\b(ignore|disregard|forget)`+w+`(all`+w+`)?(of`+w+`)?(the|everything)`+w+`(above|before|previous|prior|earlier)\b`, "ignore", "disregard", "forget"),
	pattern("disregard previous instructions", `(?i)\b(disregard|ignore|forget|bypass|override)`+w+`(all`+w+`)?(of`+w+`)?your`+w+`(own`+w+`)?(instructions|rules|guidelines|programming|directives|training|restrictions|safety|system`+w+`prompt|prompt)\b`, "disregard", "ignore", "forget", "bypass", "override"),
	pattern("disregard previous instructions", `(?i)\b(stop|quit|don't|do`+w+`not|never)`+w+`(following|obeying|follow|obey)`+w+`(your|the|any|all)`+w+`((previous|prior|original|system|above)`+w+`)?(instructions|rules|guidelines|system`+w+`prompt|prompt|directives)\b`, "follow", "obey"),
	pattern("new instructions", `(?i)\b(your|the)`+w+`(instructions|rules|guidelines|directives|system`+w+`prompt)`+w+`(have|has)`+w+`(changed|been`+w+`(updated|changed|replaced|revoked|lifted))`, "changed", "been"),
	pattern("new instructions", `(?i)\b(begin|start|end)`+w+`(of`+w+`)?(the`+w+`)?(system|new|real)`+w+`(prompt|instructions|message)\b|\bend`+w+`of`+w+`(the`+w+`)?user`+w+`(input|message)\b`, "begin", "start", "end"),
	pattern("new instructions", `(?im)^`+sp+`*(system`+w+`|admin`+w+`|developer`+w+`)?override`+sp+`*[:：!]`, "override"),
	pattern("role override", `(?i)\b(enter(ing)?|enable[sd]?|enabling|activate[sd]?|activating|switch(ing)?`+w+`to)`+w+`(developer|god|dan|jailbreak|unrestricted|admin|sudo)`+w+`mode\b`, "mode"),
	pattern("fake role line", "(?im)^"+sp+"*(```|~~~)"+sp+"*(system|assistant|user|human|instructions?)\\b", "```", "~~~"),

	// Turns and roles of a chat the text pretends to be.
	pattern("fake role line", `(?im)^(`+sp+`|[-*+>•])*(user|human)`+sp+`*:`, "user:", "user :", "user\t", "user  ", "human:", "human :", "human\t", "human  "),
	pattern("fake role line", `(?im)^`+sp+`*[\[(](system|assistant|user|human)[\])]`, "[", "("),
	pattern("fake role line", `(?m)^(`+sp+`|[-*+>•])*(系统|助手|用户|人类|开发者|管理员)`+sp+`*[:：]`, "系统:", "系统：", "助手:", "助手：", "用户:", "用户：", "人类:", "人类：", "系统 ", "助手 ", "用户 ", "人类 ", "开发者", "管理员"),
	pattern("chat template token", `<\|[^|<>\n]{0,40}\|>`, "<|"),
	pattern("chat template token", `(?i)\[/?`+sp+`*inst`+sp+`*\]|<<`+sp+`*/?`+sp+`*sys`+sp+`*>>|<`+sp+`*/?`+sp+`*(start_of_turn|end_of_turn|im_start|im_end|endoftext|eot_id|start_header_id|end_header_id|begin_of_text)\b|\bim_(start|end)\b`, "inst]", "<<", "_of_turn", "im_", "endoftext", "eot_id", "header_id", "begin_of_text"),
	// A tag right after a name with a capital is a type parameter
	// ("Vec<User>", "Promise<Context>"); anywhere else, and in lower or
	// upper case after a name ("x<user>", "x<USER>"), it is a tag.
	pattern("fake system tag", `(?i:(^|[^a-z0-9_])<`+sp+`*/?`+sp+`*(user|human|developer|prompt|context|tool_call|function_call)`+sp+`*>)|(?i:[a-z0-9_]<`+sp+`*/`+sp+`*(user|human|developer|prompt|context|tool_call|function_call)`+sp+`*>)|[A-Za-z0-9_]<`+sp+`*(user|human|developer|prompt|context|tool_call|function_call|USER|HUMAN|DEVELOPER|PROMPT|CONTEXT|TOOL_CALL|FUNCTION_CALL)`+sp+`*>`, "<"),
	pattern("fake heading", `(?im)^`+sp+`*#{1,6}`+sp+`*(system|instructions?|assistant|user|human|response|prompt|developer|admin|new`+w+`instructions|important`+w+`instructions)\b`, "#"),

	// The digest's own lines, which only the renderer may write.
	pattern("forged digest line", `(?i)#{1,6}`+sp+`*(remembered context|global library|global`+w+`)|\(end of remembered context|known failures`+sp+`*\(constraints|data from past sessions, not instructions|lessons`+sp+`*\(heuristics to weigh\)|nothing changes unless the user accepts it`, "remembered context", "# global", "#global", "known failures", "data from past", "heuristics to weigh", "nothing changes"),
	pattern("forged digest line", `(?im)^`+sp+`*#{2,6}`+sp+`*(global`+w+`)?(handoff from the last session|pending proposal|prefetch: know this first|principles \(inferred\)|hypotheses to test|facts and preferences|lessons|methods|resources|playbooks \(best first\)|known failures)`, "#"),
	// The lesson blocks' own lines (learn/lesson's Render): their tags,
	// headers and the id-tagged directive and precedent lines. A
	// directive's own Text ("Required method: …", untagged) stays clean.
	pattern("forged digest line", `(?i)(^|[^a-z0-9_])\[`+sp+`*(conflicts|boundaries)`+sp+`*\]|nothing was adjudicated|\bl\d+`+w+`required`+w+`method`+sp+`*:|\bprecedent`+sp+`*:`+sp+`*verified`+sp+`*\d|actions that produced a bad outcome|not a heuristic to weigh|strongest case for the old way|#{1,6}`+sp+`*lessons`+sp+`*:`,
		"conflicts", "boundaries", "adjudicated", "required", "precedent", "bad outcome", "heuristic to weigh", "strongest case", "lessons"),

	// Commands nobody should run on a note's word.
	pattern("download piped to a shell", `(?i)\b(curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)\b[^\n]{0,200}\|`+sp+`*(sudo`+w+`)?((ba|z|k|da|pw|fi)?sh|python3?|perl|ruby|node|iex|invoke-expression)\b`, "|"),
	pattern("download piped to a shell", `(?i)\b(base64`+w+`(-d|--decode)|xxd`+w+`-r)[^\n]{0,40}\|`+sp+`*(sudo`+w+`)?(ba|z)?sh\b|\b(iex|invoke-expression)`+sp+`*\(`+sp+`*(new-object|iwr|irm|invoke-webrequest)`, "base64", "xxd", "iex", "invoke-expression"),
	pattern("rm -rf /", `(?i)\brm`+w+`(-[a-z]*r[a-z]*f[a-z]*|-[a-z]*f[a-z]*r[a-z]*|-r`+w+`-f|-f`+w+`-r|--recursive`+w+`--force|--force`+w+`--recursive)`+w+`(--no-preserve-root`+w+`)?(/|~|\*|\$home|\.\./\.\.)`, "rm "),
	pattern("rm -rf /", `(?i)--no-preserve-root|\bmkfs(\.[a-z0-9]+)?`+w+`/dev/|\bdd`+w+`if=[^\n]{0,60}of=/dev/(sd|nvme|hd|disk|mmcblk)|:\(\)`+sp+`*\{`+sp+`*:\|:&`+sp+`*\};:`, "no-preserve-root", "mkfs", "dd ", ":()"),
	pattern("force push instruction", `(?i)\b(always|must|should|please)`+w+`(run|use|do)`+w+`[^\n]{0,20}\bgit`+w+`push`+w+`(-f\b|--force)`, "--force", "-f"),

	// Chinese overrides beyond the seed's.
	pattern("ignore previous instructions (zh)", `(忽视|不要理会|不理会|抛开|放弃|跳过|覆盖)(之前|以上|上述|前面|先前|所有|全部)?.{0,8}(指令|规则|要求|指示|设定|限制|提示)`, "忽视", "理会", "抛开", "放弃", "跳过", "覆盖"),
	pattern("role override (zh)", `(你现在是|你现在扮演|你将扮演|扮演一个|假装你是|假设你是|从现在起你|从现在开始你|今后你)`, "你现在", "你将扮演", "扮演一个", "假装你是", "假设你是", "从现在起你", "从现在开始你", "今后你"),
	pattern("new instructions (zh)", `(新的?|真正的|最新的?|隐藏的?|系统)(指令|指示|系统提示|提示词)`+sp+`*[:：]`, "指令", "指示", "提示"),
	pattern("reveal the prompt (zh)", `(输出|泄露|打印|显示|告诉我|透露|重复)(你的)?(系统提示|系统指令|提示词|初始指令|密钥|密码)`, "提示", "指令", "密钥", "密码"),
	pattern("secrecy from the user (zh)", `(不要|别|切勿|不许)(告诉|通知|让|提醒)(用户|任何人|人类)`, "告诉", "通知", "让用户", "让任何人", "让人类", "提醒"),
	pattern("role override (zh)", `(越狱模式|开发者模式|无限制模式|DAN模式)`, "模式"),

	// Phrasings a second, independent gate caught and this one did not.
	pattern("obey", `(?i)\byou`+w+`(must|will|shall|have`+w+`to)`+w+`(now`+w+`)?(obey|comply`+w+`with|do`+w+`exactly`+w+`what)\b|\bobey`+w+`(only`+w+`)?(me|the`+w+`(text|message|instructions?|note)`+w+`(below|above|that follows))\b`, "obey", "comply", "exactly what"),
	pattern("bypass safety", `(?i)\b(ignore|bypass|disable|override|circumvent|turn`+w+`off|get`+w+`around)`+w+`(all`+w+`)?((your|the|any|these|those)`+w+`)?(own`+w+`)?(safety|ethical|moderation)`+w+`(rules|guidelines|checks|policies|policy|restrictions|filters?|guardrails|measures|protocols)\b|\b(bypass|circumvent|get`+w+`around)`+w+`(all`+w+`)?((your|the|any|these|those)`+w+`)?(own`+w+`)?(security|content)`+w+`(rules|guidelines|checks|policies|policy|restrictions|filters?|guardrails|measures|protocols)\b`, "safety", "security", "content", "ethical", "moderation"),
	pattern("from now on you must only (zh)", `(从现在(开始|起)|从今(以后|往后|天起)|接下来|今后)[，,、]?`+sp+`*(你|请你)`+sp+`*(必须|只能|只许|只准|只|一律|总是|始终|永远)`, "从现在", "从今", "接下来", "今后"),
	pattern("ignore previous instructions (zh)", `(忽略|无视|忘记|忘掉|忘了|不要理会|不理会|抛开)(掉)?(你)?(以上|上面|之前|前面|先前|上述|此前)的?(所有|全部|一切)?的?(内容|对话|信息|消息|话|设定|文字)`, "忽略", "无视", "忘记", "忘掉", "忘了", "理会", "抛开"),
	pattern("role override (zh)", `你(现在|已经|从此)?(不再受|不再遵守|不用再遵守|不受|无需遵守|不必遵守|不用遵守)(任何|一切)?.{0,6}(规则|限制|约束|规定|指令)`, "不再受", "不受", "遵守"),
	pattern("fake role tag (zh)", `[【\[]`+sp+`*(系统|指令|系统指令|系统提示|系统消息|管理员|管理员指令|开发者|开发者指令)`+sp+`*[】\]]`, "【", "["),
}

// Quarantine reports whether text reads like an instruction to the agent
// and, if so, which pattern. It is checked at write and again at render, on
// every reading of the text (see quarantine).
func Quarantine(text string) (bool, string) {
	return quarantine(text, Normalize(text))
}

// quarantine checks every reading of a text, raw as written and
// normalized as stored, that a reader or a model may see in it:
//   - the normalized text;
//   - the message spelt in its tag characters, which Normalize drops
//     (untag), and the text after a right-to-left override in the order
//     it is shown (unreverse);
//
// and of each of these, folded to ASCII (full-width, confusable and
// accented letters, see fold):
//   - with HTML character references and %-escapes undone (unescape);
//   - with l33t digits read as letters (unleet);
//   - every base64 or hex run in it that decodes to text (decoded).
//
// Plain ASCII prose has one reading, or two when a word holds a digit.
func quarantine(raw, normalized string) (bool, string) {
	var checked []string
	check := func(folded string) string {
		if slices.Contains(checked, folded) {
			return ""
		}
		checked = append(checked, folded)
		return instructionIn(folded)
	}
	read := func(base, how string) string {
		f := fold(base)
		if reason := check(f); reason != "" {
			return reason + how
		}
		if u, ok := unescape(f); ok {
			f = fold(Normalize(u))
			if reason := check(f); reason != "" {
				return reason + how + " (escaped)"
			}
		}
		if l, ok := unleet(f); ok {
			if reason := check(l); reason != "" {
				return reason + how + " (l33t)"
			}
		}
		for _, hidden := range decoded(base, 2) {
			if reason := check(fold(Normalize(hidden))); reason != "" {
				return reason + how + " (encoded)"
			}
		}
		return ""
	}
	if reason := read(normalized, ""); reason != "" {
		return true, reason
	}
	if t, ok := untag(raw); ok {
		if reason := read(Normalize(t), " (tag characters)"); reason != "" {
			return true, reason
		}
	}
	if r, ok := unreverse(raw); ok {
		if reason := read(Normalize(r), " (reversed)"); reason != "" {
			return true, reason
		}
	}
	return false, ""
}

// injectionKeys indexes every pattern's keys, so one pass over a text
// tells which patterns can match it.
var injectionKeys = sync.OnceValue(func() *keywordIndex {
	x := &keywordIndex{}
	for i, p := range injection {
		for _, k := range p.keys {
			x.add(strings.ToLower(k), i)
		}
	}
	return x
})

// squeezed are phrases checked with everything but letters removed, so
// "i g n o r e previous instructions" and "ignore_previous_instructions"
// are caught; no ordinary note holds these letter runs.
var squeezed = []string{
	"ignorepreviousinstructions", "ignoreallpreviousinstructions", "ignorepriorinstructions",
	"ignoreallpriorinstructions", "ignoreaboveinstructions", "disregardpreviousinstructions",
	"disregardallpreviousinstructions", "disregardpriorinstructions", "forgetpreviousinstructions",
	"forgetallpreviousinstructions", "forgeteverythingabove", "ignoreyourinstructions",
}

func squeeze(lower string) string {
	b := make([]byte, 0, len(lower))
	for i := 0; i < len(lower); i++ {
		if c := lower[i]; 'a' <= c && c <= 'z' {
			b = append(b, c)
		}
	}
	return string(b)
}

func instructionIn(folded string) string {
	lower := strings.ToLower(folded)
	if len(lower) != len(folded) {
		lower = asciiLower(folded)
	}
	run := make([]bool, len(injection))
	for _, h := range injectionKeys().hits(lower) {
		for _, i := range h.rules {
			run[i] = true
		}
	}
	for i, p := range injection {
		if (run[i] || p.keys == nil) && p.re.MatchString(folded) {
			return p.name
		}
	}
	if sq := squeeze(lower); containsAny(sq, squeezed) {
		return "ignore previous instructions"
	}
	return ""
}
