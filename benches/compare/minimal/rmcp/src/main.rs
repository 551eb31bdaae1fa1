//! Lists a server's tools and calls one (`echo`) on rmcp: the program whose size and build
//! time `BENCHMARKS.md` compares with the same program on mcpwire (`../mcpwire`).
//!
//! ```sh
//! minimal-rmcp http://127.0.0.1:PORT/mcp
//! ```

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1).ok_or("usage: minimal-rmcp URL")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let client = ().serve(StreamableHttpClientTransport::from_uri(url)).await?;
        for tool in client.list_all_tools().await? {
            println!("tool {}", tool.name);
        }
        let mut arguments = serde_json::Map::new();
        arguments.insert("message".into(), "hello".into());
        let result = client
            .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments))
            .await?;
        println!("{result:?}");
        client.cancel().await?;
        Ok(())
    })
}
