//! What a server asks of the host beyond a form or a plain completion, read and checked before
//! the host sees it: URL-mode elicitation (SEP-1036: `client/elicitation.mdx` of 2025-11-25
//! and 2026-07-28, the `-32042` `URLElicitationRequiredError` of 2025-11-25) and sampling with
//! tools (SEP-1577: `tools`, `toolChoice`, `tool_use` and `tool_result` content in
//! `client/sampling.mdx`, 2025-11-25). Pure: the connection machine classifies each request it
//! hands out with [`classify`], and checks a host's sampling answer with
//! [`ToolSampling::answer_json`].
//!
//! A request in a mode the client did not declare, or one that breaks the spec's rules, is
//! refused with `-32602` (Invalid params, `client/elicitation.mdx` "Error Handling";
//! `client/sampling.mdx` "Error Handling") and never reaches the host.

use std::collections::HashSet;
use std::fmt;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::auth::url::Url;
use crate::mcp::{ClientCapabilities, ContentBlock, JsonObject, Role, Tool, methods};

/// The longest `message` of an elicitation kept (bytes); a longer one is refused.
const MAX_MESSAGE_BYTES: usize = 16 * 1024;
/// The longest `elicitationId` (bytes).
const MAX_ELICITATION_ID_BYTES: usize = 256;
/// The most tools one sampling request may offer.
const MAX_SAMPLING_TOOLS: usize = 256;
/// The most messages one sampling request may hold.
const MAX_SAMPLING_MESSAGES: usize = 1024;
/// The most URL elicitations one `-32042` error may list.
const MAX_REQUIRED_ELICITATIONS: usize = 32;

/// Why a server's request for input was refused before the host saw it (answered `-32602`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal(pub(crate) String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn refuse<T>(why: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal(why.into()))
}

/// What kind of input a checked request asks for.
#[derive(Debug)]
pub(crate) enum InputKind {
    /// A form elicitation (unless the client declared elicitation without the form mode), a
    /// sampling request without tools or `roots/list`: the host's
    /// [`InputHandler::answer`](crate::InputHandler::answer) gets it as it came.
    Plain,
    /// A URL-mode elicitation.
    Url(UrlElicitation),
    /// A sampling request that offers tools.
    ToolSampling(Box<ToolSampling>),
}

/// Reads and checks one request of the server's for input against what the client declared.
/// `require_id`: the revision has `elicitationId` (2025-11-25, whose URL elicitations a
/// completion notification names); at 2026-07-28 the member is optional.
pub(crate) fn classify(
    method: &str,
    params: Option<&RawValue>,
    declared: &ClientCapabilities,
    require_id: bool,
) -> Result<InputKind, Refusal> {
    match method {
        methods::ELICITATION_CREATE => {
            let params = object_of(params)?;
            let elicitation = declared.elicitation.as_ref();
            // An empty `elicitation` object means form only (`client/elicitation.mdx`). With
            // none declared, a form goes to the handler as it always did (its `answer` says).
            let form = elicitation.is_none_or(|e| e.is_empty() || e.contains_key("form"));
            let url = elicitation.is_some_and(|e| e.contains_key("url"));
            match params.get("mode") {
                None => form_or_refuse(form),
                Some(Value::String(mode)) if mode == "form" => form_or_refuse(form),
                Some(Value::String(mode)) if mode == "url" => {
                    if !url {
                        return refuse("a URL-mode elicitation, which this client did not declare");
                    }
                    UrlElicitation::read(&params, require_id).map(InputKind::Url)
                }
                Some(other) => refuse(format!("an elicitation of unknown mode {other}")),
            }
        }
        methods::SAMPLING_CREATE_MESSAGE => {
            let params_object = object_of(params)?;
            if params_object.get("tools").is_none() {
                return Ok(InputKind::Plain);
            }
            let tools_declared = declared
                .sampling
                .as_ref()
                .is_some_and(|s| s.contains_key("tools"));
            if !tools_declared {
                return refuse(
                    "a sampling request with tools, which this client did not declare \
                     (sampling.tools)",
                );
            }
            ToolSampling::read(params_object, params).map(|s| InputKind::ToolSampling(Box::new(s)))
        }
        _ => Ok(InputKind::Plain),
    }
}

fn form_or_refuse(form: bool) -> Result<InputKind, Refusal> {
    match form {
        true => Ok(InputKind::Plain),
        false => refuse("a form-mode elicitation, which this client did not declare"),
    }
}

fn object_of(params: Option<&RawValue>) -> Result<JsonObject, Refusal> {
    match params.map(|raw| serde_json::from_str::<Value>(raw.get())) {
        Some(Ok(Value::Object(object))) => Ok(object),
        None => Ok(JsonObject::new()),
        Some(_) => refuse("the params are not an object"),
    }
}

fn string_member<'a>(object: &'a JsonObject, name: &str) -> Result<Option<&'a str>, Refusal> {
    match object.get(name) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => refuse(format!("{name} is not a string")),
    }
}

/// A URL-mode elicitation (`mode: "url"`): the server asks the user to open `url`, out of
/// band, for an interaction whose data must not pass through the client (a credential, a
/// third-party authorization, a payment). Checked before the host sees it: the URL is an
/// absolute `https` URL (or `http` to a loopback host, for development: the spec's "SHOULD use
/// HTTPS URLs for non-development environments"), with no user information, no white space
/// and no control characters, at most 2048 bytes.
///
/// The spec's rules for the host (`client/elicitation.mdx`, "Safe URL Handling"): do not fetch
/// the URL or its metadata, do not open it without the user's explicit consent, show the full
/// URL first, highlight its [`host`](Self::host), warn of [punycode](Self::has_punycode), and
/// open it where neither the client nor a model can see what the user enters.
#[derive(Clone, PartialEq, Eq)]
pub struct UrlElicitation {
    message: String,
    url: String,
    host: String,
    elicitation_id: Option<String>,
}

impl fmt::Debug for UrlElicitation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL is the server's and the spec forbids secrets in it; the query is left out
        // anyway, in case a server breaks that rule.
        f.debug_struct("UrlElicitation")
            .field("host", &self.host)
            .field("elicitation_id", &self.elicitation_id)
            .finish_non_exhaustive()
    }
}

impl UrlElicitation {
    fn read(params: &JsonObject, require_id: bool) -> Result<UrlElicitation, Refusal> {
        let Some(message) = string_member(params, "message")? else {
            return refuse("a URL elicitation without a message");
        };
        if message.len() > MAX_MESSAGE_BYTES {
            return refuse(format!(
                "the elicitation's message is over {MAX_MESSAGE_BYTES} bytes"
            ));
        }
        let Some(url) = string_member(params, "url")? else {
            return refuse("a URL elicitation without a url");
        };
        let elicitation_id = string_member(params, "elicitationId")?;
        if let Some(id) = elicitation_id
            && (id.is_empty() || id.len() > MAX_ELICITATION_ID_BYTES)
        {
            return refuse(format!(
                "the elicitationId is empty or over {MAX_ELICITATION_ID_BYTES} bytes"
            ));
        }
        if require_id && elicitation_id.is_none() {
            return refuse("a URL elicitation without an elicitationId");
        }
        let host = check_url(url)?;
        Ok(UrlElicitation {
            message: message.to_owned(),
            url: url.to_owned(),
            host,
            elicitation_id: elicitation_id.map(str::to_owned),
        })
    }

    /// Why the server needs the interaction, for the user.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The URL, exactly as the server sent it: show all of it before asking for consent.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL's host (a name, an IPv4 address or a bracketed IPv6 address), to highlight.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Whether a label of the host is punycode (`xn--`): the spec asks clients to warn of it.
    pub fn has_punycode(&self) -> bool {
        self.host.split('.').any(|label| {
            label
                .get(..4)
                .is_some_and(|p| p.eq_ignore_ascii_case("xn--"))
        })
    }

    /// The server's id for the elicitation (2025-11-25; optional at 2026-07-28). A
    /// `notifications/elicitation/complete` naming it reaches
    /// [`InputHandler::elicitation_complete`](crate::InputHandler::elicitation_complete).
    pub fn elicitation_id(&self) -> Option<&str> {
        self.elicitation_id.as_deref()
    }
}

/// Checks an elicitation URL and returns its host.
fn check_url(url: &str) -> Result<String, Refusal> {
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return refuse("the elicitation URL has white space or a control character");
    }
    // A fragment is fine in a page's URL (OAuth's URL rules refuse it): check the rest.
    let (base, fragment) = match url.split_once('#') {
        Some((base, fragment)) => (base, Some(fragment)),
        None => (url, None),
    };
    if fragment.is_some_and(|f| !f.is_ascii() || f.contains('#')) {
        return refuse("the elicitation URL has an invalid fragment");
    }
    let parsed =
        Url::parse(base).map_err(|error| Refusal(format!("the elicitation URL: {error}")))?;
    if !parsed.is_secure() {
        return refuse(
            "the elicitation URL is plain http to a host that is not loopback (https is \
             required)",
        );
    }
    Ok(parsed.host().to_owned())
}

/// The elicitations of a `-32042` (`URLElicitationRequiredError`, 2025-11-25) error's `data`:
/// URL elicitations that must be completed before the request is tried again. Each is
/// checked as one sent in a request is, with its `elicitationId` required.
pub(crate) fn required_elicitations(data: &str) -> Result<Vec<UrlElicitation>, String> {
    let data: Value =
        serde_json::from_str(data).map_err(|e| format!("the error's data is not JSON: {e}"))?;
    let Some(Value::Array(list)) = data.get("elicitations") else {
        return Err("the error's data has no elicitations array".to_owned());
    };
    if list.is_empty() || list.len() > MAX_REQUIRED_ELICITATIONS {
        return Err(format!(
            "the error lists {} elicitations (1 to {MAX_REQUIRED_ELICITATIONS} allowed)",
            list.len()
        ));
    }
    list.iter()
        .map(|entry| {
            let Value::Object(object) = entry else {
                return Err("an elicitation is not an object".to_owned());
            };
            if object.get("mode").and_then(Value::as_str) != Some("url") {
                return Err("an elicitation of the error is not mode \"url\"".to_owned());
            }
            UrlElicitation::read(object, true).map_err(|refusal| refusal.0)
        })
        .collect()
}

/// The user's answer to an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElicitAction {
    /// The user consented (for a URL elicitation: to open the URL; the interaction itself
    /// happens out of band and may not be over).
    Accept,
    /// The user explicitly declined.
    Decline,
    /// The user dismissed the request without choosing.
    Cancel,
}

impl ElicitAction {
    /// The `ElicitResult` for a URL elicitation (`content` is left out in URL mode).
    pub(crate) fn to_result(self) -> Value {
        let action = match self {
            ElicitAction::Accept => "accept",
            ElicitAction::Decline => "decline",
            ElicitAction::Cancel => "cancel",
        };
        serde_json::json!({ "action": action })
    }
}

/// How the model may use the tools of a [`ToolSampling`] (`toolChoice.mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the default).
    Auto,
    /// The model must use at least one tool.
    Required,
    /// The model must not use a tool.
    None,
}

/// A model's request to use a tool (`ToolUseContent`, `type: "tool_use"`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolUse {
    /// The id a tool result answers with (`toolUseId`).
    pub id: String,
    /// The tool's name: one of the request's tools.
    pub name: String,
    /// The tool's arguments.
    pub input: JsonObject,
}

impl ToolUse {
    /// A tool use.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: JsonObject) -> Self {
        ToolUse {
            id: id.into(),
            name: name.into(),
            input,
        }
    }
}

/// A tool's result, in a user message (`ToolResultContent`, `type: "tool_result"`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolResultContent {
    /// The [`ToolUse::id`] it answers.
    pub tool_use_id: String,
    /// What the tool returned.
    pub content: Vec<ContentBlock>,
    /// Whether the tool failed (`isError`).
    pub is_error: bool,
}

/// One block of a sampling message.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum SamplingContent {
    /// A model's tool use (assistant messages).
    ToolUse(ToolUse),
    /// A tool's result (user messages that hold only tool results).
    ToolResultContent(ToolResultContent),
    /// Text, an image or audio (boxed: a block is much larger than the other variants).
    Block(Box<ContentBlock>),
}

impl SamplingContent {
    fn read(value: &Value) -> Result<SamplingContent, Refusal> {
        let Value::Object(object) = value else {
            return refuse("a sampling content block is not an object");
        };
        match object.get("type").and_then(Value::as_str) {
            Some("tool_use") => {
                let id = string_member(object, "id")?.unwrap_or_default();
                let name = string_member(object, "name")?.unwrap_or_default();
                if id.is_empty() || name.is_empty() {
                    return refuse("a tool_use block without an id or a name");
                }
                let Some(Value::Object(input)) = object.get("input") else {
                    return refuse("a tool_use block whose input is not an object");
                };
                Ok(SamplingContent::ToolUse(ToolUse::new(
                    id,
                    name,
                    input.clone(),
                )))
            }
            Some("tool_result") => {
                let Some(id) = string_member(object, "toolUseId")?.filter(|id| !id.is_empty())
                else {
                    return refuse("a tool_result block without a toolUseId");
                };
                let content = match object.get("content") {
                    Some(Value::Array(blocks)) => blocks
                        .iter()
                        .map(|block| {
                            block_of(block)
                                .map_err(|e| Refusal(format!("a tool_result's content block: {e}")))
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                    _ => return refuse("a tool_result block whose content is not an array"),
                };
                let is_error = match object.get("isError") {
                    None => false,
                    Some(Value::Bool(flag)) => *flag,
                    Some(_) => return refuse("a tool_result's isError is not a boolean"),
                };
                Ok(SamplingContent::ToolResultContent(ToolResultContent {
                    tool_use_id: id.to_owned(),
                    content,
                    is_error,
                }))
            }
            _ => block_of(value)
                .map(|block| SamplingContent::Block(Box::new(block)))
                .map_err(|e| Refusal(format!("a sampling content block: {e}"))),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            SamplingContent::ToolUse(tool_use) => serde_json::json!({
                "type": "tool_use",
                "id": tool_use.id,
                "name": tool_use.name,
                "input": tool_use.input,
            }),
            SamplingContent::ToolResultContent(result) => serde_json::json!({
                "type": "tool_result",
                "toolUseId": result.tool_use_id,
                "content": result.content,
                "isError": result.is_error,
            }),
            SamplingContent::Block(block) => serde_json::to_value(&**block).unwrap_or(Value::Null),
        }
    }
}

/// One message of a sampling conversation.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SamplingMessage {
    /// Who speaks.
    pub role: Role,
    /// What it says (a single block on the wire becomes one element).
    pub content: Vec<SamplingContent>,
}

/// A `sampling/createMessage` request that offers the model tools (SEP-1577): checked before
/// the host sees it, in either era's form. Its tools are unique by name; its messages follow
/// the spec's "Message Content Constraints": a user message with a tool result holds only tool
/// results, and every assistant message with tool uses is followed by a user message that
/// answers each of them, before any other message.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ToolSampling {
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// The tools the model may use (`name`, `description`, `inputSchema`, ...).
    pub tools: Vec<Tool>,
    /// How the model may use them.
    pub tool_choice: ToolChoice,
    /// The most tokens to sample.
    pub max_tokens: u64,
    /// The system prompt, if any.
    pub system_prompt: Option<String>,
    /// The request's params exactly as sent (model preferences, temperature, `_meta`, ...).
    pub params: Box<RawValue>,
}

impl ToolSampling {
    fn read(object: JsonObject, raw: Option<&RawValue>) -> Result<ToolSampling, Refusal> {
        let tools = match object.get("tools") {
            Some(Value::Array(tools)) if tools.len() <= MAX_SAMPLING_TOOLS => tools,
            Some(Value::Array(_)) => {
                return refuse(format!("more than {MAX_SAMPLING_TOOLS} sampling tools"));
            }
            _ => return refuse("the sampling tools are not an array"),
        };
        let mut names = HashSet::with_capacity(tools.len());
        let mut typed_tools = Vec::with_capacity(tools.len());
        for tool in tools {
            let tool: Tool = serde_json::from_value(tool.clone())
                .map_err(|e| Refusal(format!("a sampling tool: {e}")))?;
            if tool.name.is_empty() || !names.insert(tool.name.clone()) {
                return refuse(format!(
                    "the sampling tool name {:?} is empty or appears twice",
                    tool.name
                ));
            }
            if !tool.input_schema.is_object() {
                return refuse(format!(
                    "the sampling tool {:?} has no inputSchema object",
                    tool.name
                ));
            }
            typed_tools.push(tool);
        }
        let tool_choice = match object.get("toolChoice") {
            None => ToolChoice::Auto,
            Some(Value::Object(choice)) => match choice.get("mode") {
                None => ToolChoice::Auto,
                Some(Value::String(mode)) if mode == "auto" => ToolChoice::Auto,
                Some(Value::String(mode)) if mode == "required" => ToolChoice::Required,
                Some(Value::String(mode)) if mode == "none" => ToolChoice::None,
                Some(other) => return refuse(format!("an unknown toolChoice mode {other}")),
            },
            Some(_) => return refuse("toolChoice is not an object"),
        };
        let max_tokens = match object.get("maxTokens").and_then(Value::as_u64) {
            Some(max) => max,
            None => return refuse("maxTokens is missing or not a non-negative integer"),
        };
        let system_prompt = string_member(&object, "systemPrompt")?.map(str::to_owned);
        let messages = match object.get("messages") {
            Some(Value::Array(messages)) if messages.len() <= MAX_SAMPLING_MESSAGES => messages,
            Some(Value::Array(_)) => {
                return refuse(format!(
                    "more than {MAX_SAMPLING_MESSAGES} sampling messages"
                ));
            }
            _ => return refuse("the sampling messages are not an array"),
        };
        let messages = messages
            .iter()
            .map(read_message)
            .collect::<Result<Vec<_>, _>>()?;
        check_balance(&messages)?;
        let params = match raw {
            Some(raw) => raw.to_owned(),
            None => return refuse("a sampling request without params"),
        };
        Ok(ToolSampling {
            messages,
            tools: typed_tools,
            tool_choice,
            max_tokens,
            system_prompt,
            params,
        })
    }

    /// Checks a host's answer against the request and writes its `CreateMessageResult`:
    /// each tool use names one of the request's tools, under an id of its own; `toolChoice`
    /// `none` allows no tool use and `required` needs one; an answer holds no tool result; a
    /// `toolUse` stop reason comes with a tool use (and is the one given when the host gave
    /// none and the answer uses a tool).
    pub(crate) fn answer_json(&self, answer: &SamplingAnswer) -> Result<Value, String> {
        if answer.content.is_empty() {
            return Err("the sampling answer has no content".to_owned());
        }
        let mut ids = HashSet::new();
        let mut uses = 0usize;
        for block in &answer.content {
            match block {
                SamplingContent::ToolUse(tool_use) => {
                    uses += 1;
                    if tool_use.id.is_empty() || !ids.insert(tool_use.id.as_str()) {
                        return Err(format!(
                            "the tool use id {:?} is empty or appears twice",
                            tool_use.id
                        ));
                    }
                    if !self.tools.iter().any(|tool| tool.name == tool_use.name) {
                        return Err(format!(
                            "the answer uses the tool {:?}, which the request does not offer",
                            tool_use.name
                        ));
                    }
                }
                SamplingContent::ToolResultContent(_) => {
                    return Err("an assistant answer cannot hold a tool result".to_owned());
                }
                SamplingContent::Block(_) => {}
            }
        }
        match self.tool_choice {
            ToolChoice::None if uses > 0 => {
                return Err("the request's toolChoice is none, and the answer uses a tool".into());
            }
            ToolChoice::Required if uses == 0 => {
                return Err(
                    "the request's toolChoice is required, and the answer uses no tool".into(),
                );
            }
            _ => {}
        }
        let stop_reason = match (&answer.stop_reason, uses) {
            (Some(StopReason::ToolUse), 0) => {
                return Err("the stop reason is toolUse, and the answer uses no tool".to_owned());
            }
            (Some(reason), _) => Some(reason.as_str().to_owned()),
            (None, 0) => None,
            (None, _) => Some(StopReason::ToolUse.as_str().to_owned()),
        };
        let content = match answer.content.as_slice() {
            [one] => one.to_json(),
            many => Value::Array(many.iter().map(SamplingContent::to_json).collect()),
        };
        let mut result = serde_json::json!({
            "role": "assistant",
            "content": content,
            "model": answer.model,
        });
        if let (Some(reason), Value::Object(object)) = (stop_reason, &mut result) {
            object.insert("stopReason".to_owned(), Value::String(reason));
        }
        Ok(result)
    }
}

fn block_of(value: &Value) -> Result<ContentBlock, serde_json::Error> {
    // Through text: the block decoder reads members from JSON text, unknown ones kept raw.
    serde_json::from_str(&value.to_string())
}

fn read_message(value: &Value) -> Result<SamplingMessage, Refusal> {
    let Value::Object(object) = value else {
        return refuse("a sampling message is not an object");
    };
    let role = match object.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        _ => return refuse("a sampling message's role is not user or assistant"),
    };
    let content = match object.get("content") {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(SamplingContent::read)
            .collect::<Result<Vec<_>, _>>()?,
        Some(block @ Value::Object(_)) => vec![SamplingContent::read(block)?],
        _ => return refuse("a sampling message's content is not an object or an array"),
    };
    Ok(SamplingMessage { role, content })
}

/// The spec's "Tool Result Messages" and "Tool Use and Result Balance" rules.
fn check_balance(messages: &[SamplingMessage]) -> Result<(), Refusal> {
    let mut open: Option<HashSet<&str>> = None;
    for message in messages {
        let results = message
            .content
            .iter()
            .filter(|c| matches!(c, SamplingContent::ToolResultContent(_)))
            .count();
        let uses: Vec<&str> = message
            .content
            .iter()
            .filter_map(|c| match c {
                SamplingContent::ToolUse(tool_use) => Some(tool_use.id.as_str()),
                _ => None,
            })
            .collect();
        if results > 0 && results != message.content.len() {
            return refuse("tool results mixed with other content in one message");
        }
        if results > 0 && message.role != Role::User {
            return refuse("tool results in a message that is not the user's");
        }
        if !uses.is_empty() && message.role != Role::Assistant {
            return refuse("tool uses in a message that is not the assistant's");
        }
        if let Some(mut waiting) = open.take() {
            if results == 0 {
                return refuse("tool result missing in request");
            }
            for content in &message.content {
                if let SamplingContent::ToolResultContent(result) = content
                    && !waiting.remove(result.tool_use_id.as_str())
                {
                    return refuse(format!(
                        "the tool result for {:?} answers no open tool use",
                        result.tool_use_id
                    ));
                }
            }
            if !waiting.is_empty() {
                return refuse("tool result missing in request");
            }
        } else if results > 0 {
            return refuse("tool results that follow no tool use");
        }
        if !uses.is_empty() {
            let mut ids = HashSet::with_capacity(uses.len());
            for id in uses {
                if !ids.insert(id) {
                    return refuse(format!("the tool use id {id:?} appears twice"));
                }
            }
            open = Some(ids);
        }
    }
    // A conversation may end with tool uses only if nothing answers them: the model is to
    // continue from there, which no provider allows.
    if open.is_some() {
        return refuse("tool result missing in request");
    }
    Ok(())
}

/// Why the model stopped (`stopReason`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// `endTurn`.
    EndTurn,
    /// `stopSequence`.
    StopSequence,
    /// `maxTokens`.
    MaxTokens,
    /// `toolUse`: the answer asks for tool uses.
    ToolUse,
    /// Another reason, as the provider names it.
    Other(String),
}

impl StopReason {
    fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "endTurn",
            StopReason::StopSequence => "stopSequence",
            StopReason::MaxTokens => "maxTokens",
            StopReason::ToolUse => "toolUse",
            StopReason::Other(other) => other,
        }
    }
}

/// A host's answer to a [`ToolSampling`]: the assistant's message. Checked against the request
/// before it is sent ([`InputHandler::sample_with_tools`](crate::InputHandler::sample_with_tools)).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SamplingAnswer {
    /// The model that answered.
    pub model: String,
    /// Why it stopped; `toolUse` when `None` and the answer uses a tool.
    pub stop_reason: Option<StopReason>,
    /// What it said: text, tool uses.
    pub content: Vec<SamplingContent>,
}

impl SamplingAnswer {
    /// An answer from `model`, with no stop reason.
    pub fn new(model: impl Into<String>, content: Vec<SamplingContent>) -> Self {
        SamplingAnswer {
            model: model.into(),
            stop_reason: None,
            content,
        }
    }
}

#[cfg(test)]
mod tests;
