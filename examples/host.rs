//! Bindings and the `Caller`, as a host (an agent runtime, a chat backend) uses them:
//! discover a server's tools into bindings, keep them in the host's config, load the config,
//! and call tools on behalf of tenants, with credentials from the host's own secret store.
//!
//! ```sh
//! cargo run --example host                         # starts the embedded demo server, with a token
//! cargo run --example host -- http://127.0.0.1:3001/mcp   # a server with the demo's tools
//! ```
//!
//! It prints the host config, then one JSON line per event (`tool.progress`, `tool.result`)
//! of five calls: progress, structured output checked against its output schema, two at once,
//! and two refused before anything is sent (a tenant the binding does not allow, arguments
//! that do not match the input schema). Exits 0 when every call ends as expected, 1
//! otherwise.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mcpwire::ErrorKind;
use mcpwire::auth::Secret;
use mcpwire::binding::call::{CallContext, Caller, TokenSource, ToolResult};
use mcpwire::binding::config::{Server, load_config};
use mcpwire::binding::discover::{Discovery, discover};
use mcpwire::demo::{DemoOptions, DemoServer};
use mcpwire::transport::http::{HttpPool, TlsOptions};
use serde_json::{Value, json};

type Failure = Box<dyn std::error::Error>;

/// The environment variable name the bindings give for the server's token. Bindings name
/// credentials, never hold them; the host decides where names are looked up.
const TOKEN_NAME: &str = "DEMO_MCP_API_KEY";

/// The host's secret store. `EnvTokens` reads the process environment instead (what
/// `mcpwire call` uses); a host may keep credentials anywhere.
struct Vault(HashMap<String, Secret>);

impl TokenSource for Vault {
    fn token(&self, name: &str) -> Option<Secret> {
        self.0.get(name).cloned()
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Failure> {
    let mut vault = HashMap::new();
    let (url, _demo) = match std::env::args().nth(1) {
        Some(url) => (url, None),
        None => {
            // The demo server, guarding its endpoint with a bearer token.
            let token = "demo-token-held-by-the-host".to_owned();
            let mut options = DemoOptions::default();
            options.token = Some(token.clone());
            let demo = DemoServer::start_with_options(options).await?;
            println!(
                "# started the demo server at {} (bearer token required)",
                demo.url()
            );
            vault.insert(TOKEN_NAME.to_owned(), Secret::new(token));
            (demo.url(), Some(demo))
        }
    };
    let token_env = vault
        .contains_key(TOKEN_NAME)
        .then(|| TOKEN_NAME.to_owned());
    let vault = Arc::new(Vault(vault));

    // One pool for the host's whole life: connections are reused across calls, while each
    // call still gets an MCP session of its own.
    let pool = HttpPool::new(&TlsOptions::default())?;

    // 1. Discovery, as `mcp-tools -url URL -token-env DEMO_MCP_API_KEY -tenant acme -tools
    //    progress_report,weather` does: one binding per named tool, for tenant `acme`.
    let discovery = {
        let mut d = Discovery::new(
            match &token_env {
                Some(name) => Server::http(url).with_token_env(name.clone()),
                None => Server::http(url),
            },
            "acme".to_owned(),
            vec!["progress_report".to_owned(), "weather".to_owned()],
        );
        d.token = token_env.as_deref().and_then(|name| vault.token(name));
        d.timeout = Duration::from_secs(30);
        d
    };
    let bindings = discover(&pool, &discovery).await?;

    // 2. The host keeps them in its config (`tools`; its other members are its own). An
    //    operator may rename a binding, edit a description, add tenants or lower a timeout.
    let mut tools = serde_json::to_value(&bindings)?;
    tools[1]["name"] = json!("city_weather");
    tools[1]["tenants"] = json!(["acme", "globex"]);
    let config = json!({"model": "any", "tools": tools});
    println!("{}", serde_json::to_string_pretty(&config)?);

    // 3. At start-up the host loads its config (every field validated, errors naming the
    //    binding and the field) and builds one Caller (schemas compiled once).
    let bindings = load_config(&config.to_string())?;
    let caller = Caller::new(pool, bindings, vault)?;

    // 4. Calls. Each names the tenant and the host's own session and call ids (sent to the
    //    server in `_meta`; the call id is also the progress token). Every outcome is a
    //    `ToolResult`, never an `Err`; a failure says whether the tool may have run.
    let context = |tenant: &str, call_id: &str| {
        CallContext::new(tenant.to_owned(), "conversation-7", call_id.to_owned())
    };
    let print_progress = |p: mcpwire::binding::call::Progress| println!("{}", p.to_json_line());
    let mut results = Vec::new();

    let steps = json!({"steps": 3, "delay_ms": 50});
    let result = caller
        .call(
            "progress_report",
            &context("acme", "h-1"),
            &steps,
            print_progress,
            None,
        )
        .await;
    results.push(expect(result, None)?);

    // The Caller is shared: calls may run at once, each with its own MCP session.
    let (lisbon, oslo) = (json!({"city": "Lisbon"}), json!({"city": "Oslo"}));
    let (acme, globex) = (context("acme", "h-2"), context("globex", "h-3"));
    let (first, second) = tokio::join!(
        caller.call("city_weather", &acme, &lisbon, |_| {}, None),
        caller.call("city_weather", &globex, &oslo, |_| {}, None),
    );
    results.push(expect(first, None)?);
    results.push(expect(second, None)?);

    // Refused before anything is sent: a tenant the binding does not list, and arguments
    // that do not match the input schema. `unknown_outcome` is false: the tool never ran.
    let refused = caller
        .call(
            "progress_report",
            &context("globex", "h-4"),
            &steps,
            |_| {},
            None,
        )
        .await;
    results.push(expect(refused, Some("tenant_denied"))?);
    let wrong = json!({"town": "Lisbon"});
    let invalid = caller
        .call(
            "city_weather",
            &context("acme", "h-5"),
            &wrong,
            |_| {},
            None,
        )
        .await;
    results.push(expect(invalid, Some("invalid_arguments"))?);

    for result in &results {
        println!("{}", result.to_json_line());
    }
    let weather = results[1].structured_content();
    if weather.and_then(|w| w.get("city")) != Some(&Value::from("Lisbon")) {
        return Err(format!("no structured weather for Lisbon: {:?}", results[1]).into());
    }
    println!(
        "# {} calls sent over {} pooled connection(s), 2 refused before sending",
        results.iter().filter(|r| !r.is_error()).count(),
        caller.pool().connections_opened()
    );
    Ok(())
}

/// `result`, if it succeeded (`refused: None`) or was refused locally with that error kind.
fn expect(result: ToolResult, refused: Option<&str>) -> Result<ToolResult, Failure> {
    let kind = result.error_kind().map(ErrorKind::as_str);
    let as_expected = match refused {
        None => !result.is_error(),
        Some(wanted) => kind == Some(wanted) && result.unknown_outcome() == Some(false),
    };
    if as_expected {
        Ok(result)
    } else {
        Err(format!("unexpected: {}", result.to_json_line()).into())
    }
}
