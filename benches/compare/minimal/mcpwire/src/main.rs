//! Lists a server's tools and calls one (`echo`) on mcpwire: the program whose size and build
//! time `BENCHMARKS.md` compares with the same program on rmcp (`../rmcp`).
//!
//! ```sh
//! minimal-mcpwire http://127.0.0.1:PORT/mcp
//! ```

use mcpwire::client::{CallOptions, Client, ClientOptions};
use mcpwire::transport::http::{HttpConfig, HttpPool, TlsOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .ok_or("usage: minimal-mcpwire URL")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let pool = HttpPool::new(&TlsOptions::default())?;
        let client =
            Client::connect_http(&pool, HttpConfig::new(&url)?, ClientOptions::default()).await?;
        for tool in client.list_tools().await? {
            println!("tool {}", tool.name);
        }
        let mut arguments = serde_json::Map::new();
        arguments.insert("message".into(), "hello".into());
        let result = client
            .call_tool("echo", Some(arguments), CallOptions::default())
            .await?;
        println!("{result:?}");
        client.close().await;
        Ok(())
    })
}
