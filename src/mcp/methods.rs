//! Method names of MCP requests and notifications (schema `ClientRequest`, `ServerRequest`,
//! `ClientNotification`, `ServerNotification`).
//!
//! Each constant names the direction it travels in. A client answers server requests it does
//! not implement with `-32601` ([`crate::mcp::error_code::METHOD_NOT_FOUND`]) and ignores
//! notifications it does not know.

// The revision's whole vocabulary of method names, kept together so that a rule names its
// method by a constant; not every one is named by a rule yet.
#![allow(dead_code)]

// Lifecycle (basic/lifecycle.mdx).

/// Client → server request that opens a session: [`crate::mcp::InitializeRequestParams`] in,
/// [`crate::mcp::InitializeResult`] out.
pub(crate) const INITIALIZE: &str = "initialize";
/// Client → server notification sent once the `initialize` reply is accepted.
pub(crate) const INITIALIZED: &str = "notifications/initialized";

/// Client → server request (2026-07-28) asking what the server offers: its revisions,
/// capabilities and identity ([`crate::mcp::DiscoverResult`]). It is also the era probe: a
/// server that does not know it speaks an older revision.
pub(crate) const SERVER_DISCOVER: &str = "server/discover";
/// Client → server request (2026-07-28) opening a stream of list-changed and resource
/// notifications; it replaces the standalone GET stream and `resources/subscribe`.
pub(crate) const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// Server → client notification (2026-07-28), the first on a `subscriptions/listen` stream:
/// what the server granted.
pub(crate) const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

// Utilities (basic/utilities/*.mdx).

/// Request in either direction to check that the peer is alive; the answer is an empty result
/// (`basic/utilities/ping.mdx`). A client must answer a server's ping promptly.
pub(crate) const PING: &str = "ping";
/// Notification in either direction reporting progress of a request that carried
/// `_meta.progressToken` (`basic/utilities/progress.mdx`).
pub(crate) const PROGRESS: &str = "notifications/progress";
/// Notification in either direction cancelling an earlier request
/// (`basic/utilities/cancellation.mdx`).
pub(crate) const CANCELLED: &str = "notifications/cancelled";

// Tools (server/tools.mdx).

/// Client → server request listing tools, paginated by cursor.
pub(crate) const TOOLS_LIST: &str = "tools/list";
/// Client → server request calling a tool.
pub(crate) const TOOLS_CALL: &str = "tools/call";
/// Server → client notification: the tool list changed.
pub(crate) const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";

// Resources (server/resources.mdx).

/// Client → server request listing resources.
pub(crate) const RESOURCES_LIST: &str = "resources/list";
/// Client → server request listing resource templates.
pub(crate) const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// Client → server request reading one resource.
pub(crate) const RESOURCES_READ: &str = "resources/read";
/// Client → server request subscribing to a resource's updates.
pub(crate) const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// Client → server request ending a subscription.
pub(crate) const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// Server → client notification: a subscribed resource changed.
pub(crate) const RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// Server → client notification: the resource list changed.
pub(crate) const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";

// Prompts (server/prompts.mdx).

/// Client → server request listing prompts.
pub(crate) const PROMPTS_LIST: &str = "prompts/list";
/// Client → server request fetching one prompt.
pub(crate) const PROMPTS_GET: &str = "prompts/get";
/// Server → client notification: the prompt list changed.
pub(crate) const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";

// Logging and completion (server/utilities/*.mdx).

/// Client → server request setting the minimum log level.
pub(crate) const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// Server → client notification carrying one log message.
pub(crate) const LOGGING_MESSAGE: &str = "notifications/message";
/// Client → server request for argument completions.
pub(crate) const COMPLETION_COMPLETE: &str = "completion/complete";

// Client features: requests a server sends to the client (client/*.mdx).

/// Server → client request asking the client's LLM for a completion (`client/sampling.mdx`).
pub(crate) const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// Server → client request asking the user for input (`client/elicitation.mdx`); since
/// 2025-06-18.
pub(crate) const ELICITATION_CREATE: &str = "elicitation/create";
/// Server → client notification: a URL-mode elicitation finished; since 2025-11-25.
pub(crate) const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
/// Server → client request listing the client's roots (`client/roots.mdx`).
pub(crate) const ROOTS_LIST: &str = "roots/list";
/// Client → server notification: the client's roots changed.
pub(crate) const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";

// Tasks (basic/utilities/tasks.mdx), since 2025-11-25, either direction.

/// Request for a task's state; since 2025-11-25.
pub(crate) const TASKS_GET: &str = "tasks/get";
/// Request for a finished task's result; since 2025-11-25.
pub(crate) const TASKS_RESULT: &str = "tasks/result";
/// Request listing tasks; since 2025-11-25.
pub(crate) const TASKS_LIST: &str = "tasks/list";
/// Request cancelling a task; since 2025-11-25.
pub(crate) const TASKS_CANCEL: &str = "tasks/cancel";
/// Request giving a task the input it waits for (the tasks extension, SEP-2663).
pub(crate) const TASKS_UPDATE: &str = "tasks/update";
/// Notification: a task's status changed; since 2025-11-25.
pub(crate) const TASKS_STATUS: &str = "notifications/tasks/status";

/// Whether a client's request `method` changes nothing on the server, so that one the server
/// refused unhandled (429, 503) may be sent again: the era probe, `initialize` (refused, it
/// opened no session), `ping`, the listings, reads and `tasks/get`. Never `tools/call`,
/// `tasks/cancel`, `tasks/result` (which may wait on a task, and hands its result over) or
/// anything unknown.
pub(crate) fn is_idempotent(method: &str) -> bool {
    matches!(
        method,
        SERVER_DISCOVER
            | INITIALIZE
            | PING
            | TOOLS_LIST
            | RESOURCES_LIST
            | RESOURCES_TEMPLATES_LIST
            | RESOURCES_READ
            | PROMPTS_LIST
            | PROMPTS_GET
            | TASKS_GET
            | TASKS_LIST
    )
}

/// Whether `method` is a request a server may send to a client in 2025-11-25 (schema
/// `ServerRequest`). A client answers the ones it does not implement with `-32601`.
pub(crate) fn is_server_request(method: &str) -> bool {
    matches!(
        method,
        PING | SAMPLING_CREATE_MESSAGE
            | ELICITATION_CREATE
            | ROOTS_LIST
            | TASKS_GET
            | TASKS_RESULT
            | TASKS_LIST
            | TASKS_CANCEL
    )
}

/// Whether `method` is a notification a server may send to a client in 2025-11-25 (schema
/// `ServerNotification`).
pub(crate) fn is_server_notification(method: &str) -> bool {
    matches!(
        method,
        CANCELLED
            | PROGRESS
            | LOGGING_MESSAGE
            | RESOURCES_UPDATED
            | RESOURCES_LIST_CHANGED
            | TOOLS_LIST_CHANGED
            | PROMPTS_LIST_CHANGED
            | ELICITATION_COMPLETE
            | TASKS_STATUS
    )
}
