//! Decoding real server payloads (copied from the captures in `peers/captures/`, named above
//! each constant), round trips, and the error cases of each rule.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::version::{LATEST, LATEST_INITIALIZE, V2024_11_05, V2025_03_26, V2025_06_18};
use super::*;
use crate::jsonrpc::Id;

// ---------------------------------------------------------------------------------------------
// Payloads: the `data:` lines of real captures, byte for byte.
// ---------------------------------------------------------------------------------------------

/// everything/01-initialize.txt: server-everything 2026.8.31 (TypeScript SDK), protocol 2025-11-25
const EVERYTHING_INITIALIZE: &str = r##"{"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}},"completions":{}},"serverInfo":{"name":"mcp-servers/everything","title":"Everything Reference Server","version":"2.0.0"},"instructions":"# Everything Server – Server Instructions\n\nAudience: These instructions are written for an LLM or autonomous agent integrating with the Everything MCP Server.\nFollow them to use, extend, and troubleshoot the server safely and effectively.\n\n## Cross-Feature Relationships\n\n- Use `get-roots-list` to see client workspace roots before file operations\n- `gzip-file-as-resource` creates session-scoped resources accessible only during the current session\n- Enable `toggle-simulated-logging` before debugging to see server log messages\n- Enable `toggle-subscriber-updates` to receive periodic resource update notifications\n\n## Constraints & Limitations\n\n- `gzip-file-as-resource`: Max fetch size controlled by `GZIP_MAX_FETCH_SIZE` (default 10MB), timeout by `GZIP_MAX_FETCH_TIME_MILLIS` (default 30s), allowed domains by `GZIP_ALLOWED_DOMAINS`\n- Session resources are ephemeral and lost when the session ends\n- Sampling requests (`trigger-sampling-request`) require client sampling capability\n- Elicitation requests (`trigger-elicitation-request`) require client elicitation capability\n\n## Operational Patterns\n\n- For long operations, use `trigger-long-running-operation` which sends progress notifications\n- Prefer reading resources before calling mutating tools\n- Check `get-roots-list` output to understand the client's workspace context\n\n## Easter Egg\n\nIf asked about server instructions, respond with \"🎉 Server instructions are working! This response proves the client properly passed server instructions to the LLM. This demonstrates MCP's instructions feature in action.\"\n"},"jsonrpc":"2.0","id":1}"##;

/// everything/probes/p04-init-2025-03-26.txt: the same server, offered 2025-03-26
const EVERYTHING_INITIALIZE_2025_03_26: &str = r##"{"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}},"completions":{}},"serverInfo":{"name":"mcp-servers/everything","title":"Everything Reference Server","version":"2.0.0"},"instructions":"# Everything Server – Server Instructions\n\nAudience: These instructions are written for an LLM or autonomous agent integrating with the Everything MCP Server.\nFollow them to use, extend, and troubleshoot the server safely and effectively.\n\n## Cross-Feature Relationships\n\n- Use `get-roots-list` to see client workspace roots before file operations\n- `gzip-file-as-resource` creates session-scoped resources accessible only during the current session\n- Enable `toggle-simulated-logging` before debugging to see server log messages\n- Enable `toggle-subscriber-updates` to receive periodic resource update notifications\n\n## Constraints & Limitations\n\n- `gzip-file-as-resource`: Max fetch size controlled by `GZIP_MAX_FETCH_SIZE` (default 10MB), timeout by `GZIP_MAX_FETCH_TIME_MILLIS` (default 30s), allowed domains by `GZIP_ALLOWED_DOMAINS`\n- Session resources are ephemeral and lost when the session ends\n- Sampling requests (`trigger-sampling-request`) require client sampling capability\n- Elicitation requests (`trigger-elicitation-request`) require client elicitation capability\n\n## Operational Patterns\n\n- For long operations, use `trigger-long-running-operation` which sends progress notifications\n- Prefer reading resources before calling mutating tools\n- Check `get-roots-list` output to understand the client's workspace context\n\n## Easter Egg\n\nIf asked about server instructions, respond with \"🎉 Server instructions are working! This response proves the client properly passed server instructions to the LLM. This demonstrates MCP's instructions feature in action.\"\n"},"jsonrpc":"2.0","id":1}"##;

/// py-mcp-v1/01-initialize.txt: Python SDK mcp 1.30.0 (FastMCP), protocol 2025-11-25
const PY_V1_INITIALIZE: &str = r##"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"experimental":{},"prompts":{"listChanged":false},"resources":{"subscribe":false,"listChanged":false},"tools":{"listChanged":false}},"serverInfo":{"name":"py-test-server","version":"1.30.0"},"instructions":"Test server for MCP client development."}}"##;

/// py/probes/p04-init-2025-03-26.txt: Python SDK mcp 2.3.0, offered 2025-03-26
const PY_INITIALIZE_2025_03_26: &str = r##"{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"prompts":{"listChanged":false},"resources":{"listChanged":false,"subscribe":false},"tools":{"listChanged":false}},"instructions":"Test server for MCP client development.","protocolVersion":"2025-03-26","serverInfo":{"name":"py-test-server","version":"0.1.0"}}}"##;

/// everything/03-tools-list.txt
const EVERYTHING_TOOLS_LIST: &str = r##"{"result":{"tools":[{"name":"echo","title":"Echo Tool","description":"Echoes back the input string","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"message":{"type":"string","description":"Message to echo"}},"required":["message"]},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"}},{"name":"get-annotated-message","title":"Get Annotated Message Tool","description":"Demonstrates how annotations can be used to provide metadata about content.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"messageType":{"type":"string","enum":["error","success","debug"],"description":"Type of message to demonstrate different annotation patterns"},"includeImage":{"default":false,"description":"Whether to include an example image","type":"boolean"}},"required":["messageType"]},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"}},{"name":"get-env","title":"Print Environment Tool","description":"Returns all environment variables, helpful for debugging MCP server configuration","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{}},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"}},{"name":"get-resource-links","title":"Get Resource Links Tool","description":"Returns up to ten resource links that reference different types of resources","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"count":{"default":3,"description":"Number of resource links to return (1-10)","type":"number","minimum":1,"maximum":10}}},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"}},{"name":"get-resource-reference","title":"Get Resource Reference Tool","description":"Returns a resource reference that can be used by MCP clients","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"resourceType":{"default":"Text","type":"string","enum":["Text","Blob"]},"resourceId":{"default":1,"description":"ID of the text resource to fetch","type":"number"}}},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"}},{"name":"get-structured-content","title":"Get Structured Content Tool","description":"Returns structured content along with an output schema for client data validation","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"location":{"type":"string","enum":["New York","Chicago","Los Angeles"],"description":"Choose city"}},"required":["location"]},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"},"outputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"temperature":{"type":"number","description":"Temperature in celsius"},"conditions":{"type":"string","description":"Weather conditions description"},"humidity":{"type":"number","description":"Humidity percentage"}},"required":["temperature","conditions","humidity"],"additionalProperties":false}},{"name":"get-sum","title":"Get Sum Tool","description":"Returns the sum of two numbers","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"number","description":"First number"},"b":{"type":"number","description":"Second number"}},"required":["a","b"]},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"}},{"name":"get-tiny-image","title":"Get Tiny Image Tool","description":"Returns a tiny MCP logo image.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{}},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"}},{"name":"gzip-file-as-resource","title":"GZip File as Resource Tool","description":"Compresses a single file using gzip compression. Depending upon the selected output type, returns either the compressed data as a gzipped resource or a resource link, allowing it to be downloaded in a subsequent request during the current session.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"name":{"default":"README.md.gz","type":"string","description":"Name of the output file"},"data":{"default":"https://raw.githubusercontent.com/modelcontextprotocol/servers/refs/heads/main/README.md","type":"string","format":"uri","description":"URL or data URI of the file content to compress"},"outputType":{"default":"resourceLink","description":"How the resulting gzipped file should be returned. 'resourceLink' returns a link to a resource that can be read later, 'resource' returns a full resource object.","type":"string","enum":["resourceLink","resource"]}}},"annotations":{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":true,"openWorldHint":true},"execution":{"taskSupport":"forbidden"}},{"name":"toggle-simulated-logging","title":"Toggle Simulated Logging","description":"Toggles simulated, random-leveled logging on or off.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{}},"annotations":{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":false},"execution":{"taskSupport":"forbidden"}},{"name":"toggle-subscriber-updates","title":"Toggle Subscriber Updates","description":"Toggles simulated resource subscription updates on or off.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{}},"annotations":{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":false},"execution":{"taskSupport":"forbidden"}},{"name":"trigger-long-running-operation","title":"Trigger Long Running Operation Tool","description":"Demonstrates a long running operation with progress updates.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"duration":{"default":10,"description":"Duration of the operation in seconds","type":"number"},"steps":{"default":5,"description":"Number of steps in the operation","type":"number"}}},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"execution":{"taskSupport":"forbidden"}},{"name":"simulate-research-query","title":"Simulate Research Query","description":"Simulates a deep research operation that gathers, analyzes, and synthesizes information. Demonstrates MCP task-based operations with progress through multiple stages. If 'ambiguous' is true and client supports elicitation, sends an elicitation request for clarification.","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"topic":{"type":"string","description":"The research topic to investigate"},"ambiguous":{"default":false,"description":"Simulate an ambiguous query that requires clarification (triggers input_required status)","type":"boolean"}},"required":["topic"]},"annotations":{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":false},"execution":{"taskSupport":"required"}}]},"jsonrpc":"2.0","id":2}"##;

/// py/03-tools-list.txt: Python SDK mcp 2.3.0
const PY_TOOLS_LIST: &str = r##"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"description":"Return the given text unchanged (plain text content only).","inputSchema":{"properties":{"text":{"title":"Text","type":"string"}},"required":["text"],"type":"object","title":"echo_textArguments"},"name":"echo_text"},{"description":"Square an integer. `n` is a required integer.","inputSchema":{"properties":{"n":{"title":"N","type":"integer"}},"required":["n"],"type":"object","title":"squareArguments"},"name":"square"},{"description":"Return a 4x4 red PNG as an image content block.","inputSchema":{"properties":{},"type":"object","title":"tiny_imageArguments"},"name":"tiny_image"},{"description":"Return text, an image and an embedded text resource.","inputSchema":{"properties":{},"type":"object","title":"mixed_contentArguments"},"name":"mixed_content"},{"description":"Fake weather report; returns structuredContent matching the outputSchema.","inputSchema":{"properties":{"city":{"title":"City","type":"string"}},"required":["city"],"type":"object","title":"weatherArguments"},"name":"weather","outputSchema":{"properties":{"city":{"description":"City name as given","title":"City","type":"string"},"temperature_c":{"description":"Temperature in Celsius","title":"Temperature C","type":"number"},"conditions":{"description":"Weather conditions","title":"Conditions","type":"string"},"humidity":{"description":"Relative humidity in percent","title":"Humidity","type":"integer"}},"required":["city","temperature_c","conditions","humidity"],"type":"object","description":"Structured weather report.","title":"Weather"}},{"description":"Always fails: the result has isError=true and the message as text.","inputSchema":{"properties":{"message":{"default":"boom","title":"Message","type":"string"}},"type":"object","title":"failArguments"},"name":"fail","outputSchema":{"properties":{"result":{"title":"Result","type":"string"}},"required":["result"],"type":"object","title":"failOutput"}},{"description":"Send notifications/progress `steps` times, sleeping `delay` seconds before each.","inputSchema":{"properties":{"steps":{"default":5,"title":"Steps","type":"integer"},"delay":{"default":0.5,"title":"Delay","type":"number"}},"type":"object","title":"progressArguments"},"name":"progress"},{"description":"Send `count` logging notifications (notifications/message), then return.","inputSchema":{"properties":{"count":{"default":3,"title":"Count","type":"integer"}},"type":"object","title":"log_messagesArguments"},"name":"log_messages"},{"description":"Sleep `seconds` (default 35) - for cancellation and timeout tests. Sends one progress notification per second when a progressToken is given.","inputSchema":{"properties":{"seconds":{"default":35.0,"title":"Seconds","type":"number"}},"type":"object","title":"slowArguments"},"name":"slow"}]}}"##;

/// py-mcp-v1/03-tools-list.txt: Python SDK mcp 1.30.0
const PY_V1_TOOLS_LIST: &str = r##"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo_text","description":"Return the given text unchanged (plain text content only).","inputSchema":{"properties":{"text":{"title":"Text","type":"string"}},"required":["text"],"title":"echo_textArguments","type":"object"}},{"name":"square","description":"Square an integer. `n` is a required integer.","inputSchema":{"properties":{"n":{"title":"N","type":"integer"}},"required":["n"],"title":"squareArguments","type":"object"}},{"name":"tiny_image","description":"Return a 4x4 red PNG as an image content block.","inputSchema":{"properties":{},"title":"tiny_imageArguments","type":"object"}},{"name":"mixed_content","description":"Return text, an image and an embedded text resource.","inputSchema":{"properties":{},"title":"mixed_contentArguments","type":"object"}},{"name":"weather","description":"Fake weather report; returns structuredContent matching the outputSchema.","inputSchema":{"properties":{"city":{"title":"City","type":"string"}},"required":["city"],"title":"weatherArguments","type":"object"},"outputSchema":{"description":"Structured weather report.","properties":{"city":{"description":"City name as given","title":"City","type":"string"},"temperature_c":{"description":"Temperature in Celsius","title":"Temperature C","type":"number"},"conditions":{"description":"Weather conditions","title":"Conditions","type":"string"},"humidity":{"description":"Relative humidity in percent","title":"Humidity","type":"integer"}},"required":["city","temperature_c","conditions","humidity"],"title":"Weather","type":"object"}},{"name":"fail","description":"Always fails: the result has isError=true and the message as text.","inputSchema":{"properties":{"message":{"default":"boom","title":"Message","type":"string"}},"title":"failArguments","type":"object"},"outputSchema":{"properties":{"result":{"title":"Result","type":"string"}},"required":["result"],"title":"failOutput","type":"object"}},{"name":"progress","description":"Send notifications/progress `steps` times, sleeping `delay` seconds before each.","inputSchema":{"properties":{"steps":{"default":5,"title":"Steps","type":"integer"},"delay":{"default":0.5,"title":"Delay","type":"number"}},"title":"progressArguments","type":"object"}},{"name":"log_messages","description":"Send `count` logging notifications (notifications/message), then return.","inputSchema":{"properties":{"count":{"default":3,"title":"Count","type":"integer"}},"title":"log_messagesArguments","type":"object"}},{"name":"slow","description":"Sleep `seconds` (default 35) - for cancellation and timeout tests. Sends one progress notification per second when a progressToken is given.","inputSchema":{"properties":{"seconds":{"default":35.0,"title":"Seconds","type":"number"}},"title":"slowArguments","type":"object"}}]}}"##;

/// everything/calls/call-echo.txt
const EVERYTHING_ECHO: &str =
    r##"{"result":{"content":[{"type":"text","text":"Echo: hi"}]},"jsonrpc":"2.0","id":11}"##;

/// everything/calls/call-echo-missing-arg.txt
const EVERYTHING_ECHO_MISSING_ARG: &str = r##"{"result":{"content":[{"type":"text","text":"MCP error -32602: Input validation error: Invalid arguments for tool echo: Invalid input: expected string, received undefined at message"}],"isError":true},"jsonrpc":"2.0","id":12}"##;

/// everything/calls/call-get-annotated-message.txt
const EVERYTHING_ANNOTATED_MESSAGE: &str = r##"{"result":{"content":[{"type":"text","text":"Error: Operation failed","annotations":{"audience":["user","assistant"],"priority":1}},{"type":"image","data":"iVBORw0KGgoAAAANSUhEUgAAABQAAAAUCAYAAACNiR0NAAAKsGlDQ1BJQ0MgUHJvZmlsZQAASImVlwdUU+kSgOfe9JDQEiIgJfQmSCeAlBBaAAXpYCMkAUKJMRBU7MriClZURLCs6KqIgo0idizYFsWC3QVZBNR1sWDDlXeBQ9jdd9575805c+a7c+efmf+e/z9nLgCdKZDJMlF1gCxpjjwyyI8dn5DIJvUABRiY0kBdIMyWcSMiwgCTUft3+dgGyJC9YzuU69/f/1fREImzhQBIBMbJomxhFsbHMe0TyuQ5ALg9mN9kbo5siK9gzJRjDWL8ZIhTR7hviJOHGY8fjomO5GGsDUCmCQTyVACaKeZn5wpTsTw0f4ztpSKJFGPsGbyzsmaLMMbqgiUWI8N4KD8n+S95Uv+WM1mZUyBIVfLIXoaF7C/JlmUK5v+fn+N/S1amYrSGOaa0NHlwJGaxvpAHGbNDlSxNnhI+yhLRcPwwpymCY0ZZmM1LHGWRwD9UuTZzStgop0gC+co8OfzoURZnB0SNsnx2pLJWipzHHWWBfKyuIiNG6U8T85X589Ki40Y5VxI7ZZSzM6JCx2J4Sr9cEansXywN8hurG6jce1b2X/Yr4SvX5qRFByv3LhjrXyzljuXMjlf2JhL7B4zFxCjjZTl+ylqyzAhlvDgzSOnPzo1Srs3BDuTY2gjlN0wXhESMMoRBELAhBjIhB+QggECQgBTEOeJ5Q2cUeLNl8+WS1LQcNhe7ZWI2Xyq0m8B2tHd0Bhi6syNH4j1r+C4irGtjvhWVAF4nBgcHT475Qm4BHEkCoNaO+SxnAKh3A1w5JVTIc0d8Q9cJCEAFNWCCDhiACViCLTiCK3iCLwRACIRDNCTATBBCGmRhnc+FhbAMCqAI1sNmKIOdsBv2wyE4CvVwCs7DZbgOt+AePIZ26IJX0AcfYQBBEBJCRxiIDmKImCE2iCPCQbyRACQMiUQSkCQkFZEiCmQhsgIpQoqRMmQXUokcQU4g55GrSCvyEOlAepF3yFcUh9JQJqqPmqMTUQ7KRUPRaHQGmorOQfPQfHQtWopWoAfROvQ8eh29h7ajr9B+HOBUcCycEc4Wx8HxcOG4RFwKTo5bjCvEleAqcNW4Rlwz7g6uHfca9wVPxDPwbLwt3hMfjI/BC/Fz8Ivxq/Fl+P34OvxF/B18B74P/51AJ+gRbAgeBD4hnpBKmEsoIJQQ9hJqCZcI9whdhI9EIpFFtCC6EYOJCcR04gLiauJ2Yg3xHLGV2EnsJ5FIOiQbkhcpnCQg5ZAKSFtJB0lnSbdJXaTPZBWyIdmRHEhOJEvJy8kl5APkM+Tb5G7yAEWdYkbxoIRTRJT5lHWUPZRGyk1KF2WAqkG1oHpRo6np1GXUUmo19RL1CfW9ioqKsYq7ylQVicpSlVKVwypXVDpUvtA0adY0Hm06TUFbS9tHO0d7SHtPp9PN6b70RHoOfS29kn6B/oz+WZWhaqfKVxWpLlEtV61Tva36Ro2iZqbGVZuplqdWonZM7abaa3WKurk6T12gvli9XP2E+n31fg2GhoNGuEaWxmqNAxpXNXo0SZrmmgGaIs18zd2aFzQ7GTiGCYPHEDJWMPYwLjG6mESmBZPPTGcWMQ8xW5h9WppazlqxWvO0yrVOa7WzcCxzFp+VyVrHOspqY30dpz+OO048btW46nG3x33SHq/tqy3WLtSu0b6n/VWHrROgk6GzQade56kuXtdad6ruXN0dupd0X49njvccLxxfOP7o+Ed6qJ61XqTeAr3dejf0+vUN9IP0Zfpb9S/ovzZgGfgapBtsMjhj0GvIMPQ2lBhuMjxr+JKtxeayM9ml7IvsPiM9o2AjhdEuoxajAWML4xjj5cY1xk9NqCYckxSTTSZNJn2mhqaTTReaVpk+MqOYcczSzLaYNZt9MrcwjzNfaV5v3mOhbcG3yLOosnhiSbf0sZxjWWF514poxbHKsNpudcsatXaxTrMut75pg9q42khsttu0TiBMcJ8gnVAx4b4tzZZrm2tbZdthx7ILs1tuV2/3ZqLpxMSJGyY2T/xu72Kfab/H/rGDpkOIw3KHRod3jtaOQsdyx7tOdKdApyVODU5vnW2cxc47nB+4MFwmu6x0aXL509XNVe5a7drrZuqW5LbN7T6HyYngrOZccSe4+7kvcT/l/sXD1SPH46jHH562nhmeBzx7JllMEk/aM6nTy9hL4LXLq92b7Z3k/ZN3u4+Rj8Cnwue5r4mvyHevbzfXipvOPch942fvJ/er9fvE8+At4p3zx/kH+Rf6twRoBsQElAU8CzQOTA2sCuwLcglaEHQumBAcGrwh+D5fny/kV/L7QtxCFoVcDKWFRoWWhT4Psw6ThzVORieHTN44+ckUsynSKfXhEM4P3xj+NMIiYk7EyanEqRFTy6e+iHSIXBjZHMWImhV1IOpjtF/0uujHMZYxipimWLXY6bGVsZ/i/OOK49rjJ8Yvir+eoJsgSWhIJCXGJu5N7J8WMG3ztK7pLtMLprfNsJgxb8bVmbozM2eenqU2SzDrWBIhKS7pQNI3QbigQtCfzE/eltwn5Am3CF+JfEWbRL1iL3GxuDvFK6U4pSfVK3Vjam+aT1pJ2msJT1ImeZsenL4z/VNGeMa+jMHMuMyaLHJWUtYJqaY0Q3pxtsHsebNbZTayAln7HI85m+f0yUPle7OR7BnZDTlMbDi6obBU/KDoyPXOLc/9PDd27rF5GvOk827Mt56/an53XmDezwvwC4QLmhYaLVy2sGMRd9Guxcji5MVNS0yW5C/pWhq0dP8y6rKMZb8st19evPzDirgVjfn6+UvzO38I+qGqQLVAXnB/pefKnT/if5T82LLKadXWVd8LRYXXiuyLSoq+rRauvrbGYU3pmsG1KWtb1rmu27GeuF66vm2Dz4b9xRrFecWdGydvrNvE3lS46cPmWZuvljiX7NxC3aLY0l4aVtqw1XTr+q3fytLK7pX7ldds09u2atun7aLtt3f47qjeqb+zaOfXnyQ/PdgVtKuuwryiZDdxd+7uF3ti9zT/zPm5cq/u3qK9f+6T7mvfH7n/YqVbZeUBvQPrqtAqRVXvwekHbx3yP9RQbVu9q4ZVU3QYDisOvzySdKTtaOjRpmOcY9XHzY5vq2XUFtYhdfPr+urT6tsbEhpaT4ScaGr0bKw9aXdy3ymjU+WntU6vO0M9k39m8Gze2f5zsnOvz6ee72ya1fT4QvyFuxenXmy5FHrpyuXAyxeauc1nr3hdOXXV4+qJa5xr9dddr9fdcLlR+4vLL7Utri11N91uNtzyv9XYOqn1zG2f2+fv+N+5fJd/9/q9Kfda22LaHtyffr/9gehBz8PMh28f5T4aeLz0CeFJ4VP1pyXP9J5V/Gr1a027a/vpDv+OG8+jnj/uFHa++i37t29d+S/oL0q6Dbsrexx7TvUG9t56Oe1l1yvZq4HXBb9r/L7tjeWb43/4/nGjL76v66387eC71e913u/74PyhqT+i/9nHrI8Dnwo/63ze/4Xzpflr3NfugbnfSN9K/7T6s/F76Pcng1mDgzKBXDA8CuAwRVNSAN7tA6AnADCwGYI6bWSmHhZk5D9gmOA/8cjcPSyuANWYGRqNeOcADmNqvhRAzRdgaCyK9gXUyUmpo/Pv8Kw+JAbYv8K0HECi2x6tebQU/iEjc/xf+v6nBWXWv9l/AV0EC6JTIblRAAAAeGVYSWZNTQAqAAAACAAFARIAAwAAAAEAAQAAARoABQAAAAEAAABKARsABQAAAAEAAABSASgAAwAAAAEAAgAAh2kABAAAAAEAAABaAAAAAAAAAJAAAAABAAAAkAAAAAEAAqACAAQAAAABAAAAFKADAAQAAAABAAAAFAAAAAAXNii1AAAACXBIWXMAABYlAAAWJQFJUiTwAAAB82lUWHRYTUw6Y29tLmFkb2JlLnhtcAAAAAAAPHg6eG1wbWV0YSB4bWxuczp4PSJhZG9iZTpuczptZXRhLyIgeDp4bXB0az0iWE1QIENvcmUgNi4wLjAiPgogICA8cmRmOlJERiB4bWxuczpyZGY9Imh0dHA6Ly93d3cudzMub3JnLzE5OTkvMDIvMjItcmRmLXN5bnRheC1ucyMiPgogICAgICA8cmRmOkRlc2NyaXB0aW9uIHJkZjphYm91dD0iIgogICAgICAgICAgICB4bWxuczp0aWZmPSJodHRwOi8vbnMuYWRvYmUuY29tL3RpZmYvMS4wLyI+CiAgICAgICAgIDx0aWZmOllSZXNvbHV0aW9uPjE0NDwvdGlmZjpZUmVzb2x1dGlvbj4KICAgICAgICAgPHRpZmY6T3JpZW50YXRpb24+MTwvdGlmZjpPcmllbnRhdGlvbj4KICAgICAgICAgPHRpZmY6WFJlc29sdXRpb24+MTQ0PC90aWZmOlhSZXNvbHV0aW9uPgogICAgICAgICA8dGlmZjpSZXNvbHV0aW9uVW5pdD4yPC90aWZmOlJlc29sdXRpb25Vbml0PgogICAgICA8L3JkZjpEZXNjcmlwdGlvbj4KICAgPC9yZGY6UkRGPgo8L3g6eG1wbWV0YT4KReh49gAAAjRJREFUOBGFlD2vMUEUx2clvoNCcW8hCqFAo1dKhEQpvsF9KrWEBh/ALbQ0KkInBI3SWyGPCCJEQliXgsTLefaca/bBWjvJzs6cOf/fnDkzOQJIjWm06/XKBEGgD8c6nU5VIWgBtQDPZPWtJE8O63a7LBgMMo/Hw0ql0jPjcY4RvmqXy4XMjUYDUwLtdhtmsxnYbDbI5/O0djqdFFKmsEiGZ9jP9gem0yn0ej2Yz+fg9XpfycimAD7DttstQTDKfr8Po9GIIg6Hw1Cr1RTgB+A72GAwgMPhQLBMJgNSXsFqtUI2myUo18pA6QJogefsPrLBX4QdCVatViklw+EQRFGEj88P2O12pEUGATmsXq+TaLPZ0AXgMRF2vMEqlQoJTSYTpNNpApvNZliv1/+BHDaZTAi2Wq1A3Ig0xmMej7+RcZjdbodUKkWAaDQK+GHjHPnImB88JrZIJAKFQgH2+z2BOczhcMiwRCIBgUAA+NN5BP6mj2DYff35gk6nA61WCzBn2JxO5wPM7/fLz4vD0E+OECfn8xl/0Gw2KbLxeAyLxQIsFgt8p75pDSO7h/HbpUWpewCike9WLpfB7XaDy+WCYrFI/slk8i0MnRRAUt46hPMI4vE4+Hw+ec7t9/44VgWigEeby+UgFArJWjUYOqhWG6x50rpcSfR6PVUfNOgEVRlTX0HhrZBKz4MZjUYWi8VoA+lc9H/VaRZYjBKrtXR8tlwumcFgeMWRbZpA9ORQWfVm8A/FsrLaxebd5wAAAABJRU5ErkJggg==","mimeType":"image/png","annotations":{"audience":["user"],"priority":0.5}}]},"jsonrpc":"2.0","id":19}"##;

/// everything/calls/call-get-resource-links.txt
const EVERYTHING_RESOURCE_LINKS: &str = r##"{"result":{"content":[{"type":"text","text":"Here are 2 resource links to resources available in this server:"},{"name":"Blob Resource 1","uri":"demo://resource/dynamic/blob/1","description":"Resource 1: plaintext resource","mimeType":"text/plain","type":"resource_link"},{"name":"Text Resource 2","uri":"demo://resource/dynamic/text/2","description":"Resource 2: plaintext resource","mimeType":"text/plain","type":"resource_link"}]},"jsonrpc":"2.0","id":17}"##;

/// everything/calls/call-get-resource-reference.txt
const EVERYTHING_RESOURCE_REFERENCE: &str = r##"{"result":{"content":[{"type":"text","text":"Returning resource reference for Resource 2:"},{"type":"resource","resource":{"uri":"demo://resource/dynamic/blob/2","mimeType":"text/plain","blob":"UmVzb3VyY2UgMjogVGhpcyBpcyBhIGJhc2U2NCBibG9iIGNyZWF0ZWQgYXQgODoxMjo0MyBBTQ=="}},{"type":"text","text":"You can access this resource using the URI: demo://resource/dynamic/blob/2"}]},"jsonrpc":"2.0","id":18}"##;

/// everything/calls/call-get-structured-content.txt
const EVERYTHING_STRUCTURED: &str = r##"{"result":{"content":[{"type":"text","text":"{\"temperature\":36,\"conditions\":\"Light rain / drizzle\",\"humidity\":82}"}],"structuredContent":{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}},"jsonrpc":"2.0","id":16}"##;

/// everything/calls/call-gzip-data-uri.txt
const EVERYTHING_GZIP_DATA_URI: &str = r##"{"result":{"content":[{"type":"resource","resource":{"uri":"demo://resource/session/x.gz","mimeType":"application/gzip","blob":"H4sIAAAAAAAAA8tIzcnJBwCGphA2BQAAAA=="}}]},"jsonrpc":"2.0","id":21}"##;

/// everything/probes/p16-unknown-tool.txt
const EVERYTHING_UNKNOWN_TOOL: &str = r##"{"result":{"content":[{"type":"text","text":"MCP error -32602: Tool no-such-tool not found"}],"isError":true},"jsonrpc":"2.0","id":12}"##;

/// py/calls/call-echo_text.txt
const PY_ECHO_TEXT: &str = r##"{"jsonrpc":"2.0","id":11,"result":{"content":[{"text":"hi","type":"text"}],"isError":false}}"##;

/// py/calls/call-fail.txt
const PY_FAIL: &str = r##"{"jsonrpc":"2.0","id":19,"result":{"content":[{"text":"Error executing tool fail: kaputt","type":"text"}],"isError":true}}"##;

/// py/calls/call-mixed_content.txt
const PY_MIXED_CONTENT: &str = r##"{"jsonrpc":"2.0","id":17,"result":{"content":[{"text":"some text","type":"text"},{"data":"iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==","mimeType":"image/png","type":"image"},{"resource":{"mimeType":"text/plain","text":"embedded resource text","uri":"test://mixed/readme.txt"},"type":"resource"}],"isError":false}}"##;

/// py-mcp-v1/calls/call-mixed_content.txt
const PY_V1_MIXED_CONTENT: &str = r##"{"jsonrpc":"2.0","id":13,"result":{"content":[{"type":"text","text":"some text"},{"type":"image","data":"iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==","mimeType":"image/png"},{"type":"resource","resource":{"uri":"test://mixed/readme.txt","mimeType":"text/plain","text":"embedded resource text"}}],"isError":false}}"##;

/// py/calls/call-tiny_image.txt
const PY_TINY_IMAGE: &str = r##"{"jsonrpc":"2.0","id":16,"result":{"content":[{"data":"iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==","mimeType":"image/png","type":"image"}],"isError":false}}"##;

/// py/calls/call-weather.txt
const PY_WEATHER: &str = r##"{"jsonrpc":"2.0","id":18,"result":{"content":[{"text":"{\n  \"city\": \"Oslo\",\n  \"temperature_c\": 21.5,\n  \"conditions\": \"Sunny\",\n  \"humidity\": 40\n}","type":"text"}],"isError":false,"structuredContent":{"city":"Oslo","temperature_c":21.5,"conditions":"Sunny","humidity":40}}}"##;

/// py-mcp-v1/calls/call-weather.txt
const PY_V1_WEATHER: &str = r##"{"jsonrpc":"2.0","id":14,"result":{"content":[{"type":"text","text":"{\n  \"city\": \"Oslo\",\n  \"temperature_c\": 21.5,\n  \"conditions\": \"Sunny\",\n  \"humidity\": 40\n}"}],"structuredContent":{"city":"Oslo","temperature_c":21.5,"conditions":"Sunny","humidity":40},"isError":false}}"##;

/// py/calls/call-log_messages.txt, first event
const PY_LOG_1: &str = r##"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"log line 1 of 2"}}"##;

/// py/calls/call-log_messages.txt, last event
const PY_LOG_RESULT: &str = r##"{"jsonrpc":"2.0","id":20,"result":{"content":[{"text":"sent 2 log messages","type":"text"}],"isError":false}}"##;

/// everything/04-tools-call-progress.txt, first event
const EVERYTHING_PROGRESS_1: &str = r##"{"method":"notifications/progress","params":{"progress":1,"total":3,"progressToken":1},"jsonrpc":"2.0"}"##;

/// everything/04-tools-call-progress.txt, last event
const EVERYTHING_PROGRESS_RESULT: &str = r##"{"result":{"content":[{"type":"text","text":"Long running operation completed. Duration: 3 seconds, Steps: 3."}]},"jsonrpc":"2.0","id":3}"##;

/// everything/cancel.call.txt, fifth event
const EVERYTHING_PROGRESS_STRING_TOKEN: &str = r##"{"method":"notifications/progress","params":{"progress":5,"total":12,"progressToken":"c1"},"jsonrpc":"2.0"}"##;

/// py/04-tools-call-progress.txt, second event
const PY_PROGRESS_2: &str = r##"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2,"total":3,"message":"step 2 of 3"}}"##;

/// py/calls/call-slow-2s-with-token.txt, first event
const PY_PROGRESS_FLOAT: &str = r##"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1.0,"total":2.0}}"##;

/// py/probes/p19-ping.txt
const PY_PING: &str = r##"{"jsonrpc":"2.0","id":13,"result":{}}"##;

/// everything/probes/p19-ping.txt
const EVERYTHING_PING: &str = r##"{"result":{},"jsonrpc":"2.0","id":13}"##;

/// Python SDK mcp 2.3.0 (`peers/py_server.py`), offered 2025-06-18; recorded with curl for these
/// tests (the shared captures have no 2025-06-18 exchange).
const PY_INITIALIZE_2025_06_18: &str = r##"{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"prompts":{"listChanged":false},"resources":{"listChanged":false,"subscribe":false},"tools":{"listChanged":false}},"instructions":"Test server for MCP client development.","protocolVersion":"2025-06-18","serverInfo":{"name":"py-test-server","version":"0.1.0"}}}"##;

/// The same server on a 2025-03-26 session still sends `structuredContent`; recorded with curl
/// for these tests.
const PY_WEATHER_ON_2025_03_26: &str = r##"{"jsonrpc":"2.0","id":2,"result":{"content":[{"text":"{\n  \"city\": \"Oslo\",\n  \"temperature_c\": 21.5,\n  \"conditions\": \"Sunny\",\n  \"humidity\": 40\n}","type":"text"}],"isError":false,"structuredContent":{"city":"Oslo","temperature_c":21.5,"conditions":"Sunny","humidity":40}}}"##;

/// The `initialize` params that `peers/probe.sh` sends (see the `### curl` line of
/// `everything/probes/p04-init-2025-03-26.txt`).
const PROBE_INITIALIZE_PARAMS: &str = r##"{"protocolVersion":"2025-03-26","capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"curl-probe","version":"0.0.1"}}"##;

/// The `notifications/cancelled` params that `peers/capture-cancel.sh` sends.
const CAPTURE_CANCEL_PARAMS: &str = r##"{"requestId":7,"reason":"user cancelled"}"##;

// ---------------------------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------------------------

/// The members of a JSON-RPC envelope, as the jsonrpc layer hands them over: raw text.
#[derive(Deserialize)]
struct Envelope {
    result: Option<Box<RawValue>>,
    params: Option<Box<RawValue>>,
}

fn envelope(json: &str) -> Envelope {
    serde_json::from_str(json).expect("a JSON-RPC envelope")
}

fn result_of(json: &str) -> Box<RawValue> {
    envelope(json).result.expect("a result")
}

fn params_of(json: &str) -> Box<RawValue> {
    envelope(json).params.expect("params")
}

/// Replaces every number by its `f64` value, so that `1` and `1.0` compare equal (a field typed
/// `f64` re-encodes `1` as `1.0`; the value is the same).
fn numbers_as_f64(v: Value) -> Value {
    match v {
        Value::Number(n) => n.as_f64().map_or(Value::Number(n), |f| json!(f)),
        Value::Array(a) => Value::Array(a.into_iter().map(numbers_as_f64).collect()),
        Value::Object(o) => {
            Value::Object(o.into_iter().map(|(k, v)| (k, numbers_as_f64(v))).collect())
        }
        other => other,
    }
}

/// Decodes `raw` as `T`, and checks that re-encoding loses nothing (same JSON value) and that
/// decoding the re-encoded text gives an equal `T`.
fn decode_lossless<T>(raw: &str) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let decoded: T = serde_json::from_str(raw).expect("decodes");
    let reencoded = serde_json::to_string(&decoded).expect("encodes");
    let original: Value = serde_json::from_str(raw).expect("JSON");
    let again: Value = serde_json::from_str(&reencoded).expect("JSON");
    assert_eq!(
        numbers_as_f64(again),
        numbers_as_f64(original),
        "re-encoding lost or changed something"
    );
    let redecoded: T = serde_json::from_str(&reencoded).expect("decodes again");
    assert_eq!(redecoded, decoded, "round trip");
    decoded
}

fn call_result(envelope_json: &str) -> CallToolResult {
    let raw = result_of(envelope_json);
    let typed = CallToolRequest::decode_result(&raw).expect("a CallToolResult");
    assert_eq!(decode_lossless::<CallToolResult>(raw.get()), typed);
    typed
}

fn block(json: &str) -> Result<ContentBlock, serde_json::Error> {
    serde_json::from_str(json)
}

fn block_err(json: &str) -> String {
    match block(json) {
        Ok(b) => panic!("{json} decoded as {b:?}"),
        Err(e) => e.to_string(),
    }
}

/// One test per real `tools/call` reply: decode it losslessly, then check what it holds.
macro_rules! call_cases {
    ($( $name:ident: $payload:expr => |$r:ident| $body:block )+) => {$(
        #[test]
        fn $name() {
            let $r = call_result($payload);
            $body
        }
    )+};
}

// ---------------------------------------------------------------------------------------------
// Protocol versions.
// ---------------------------------------------------------------------------------------------

#[test]
fn versions_parse_and_print() {
    for v in ProtocolVersion::ALL {
        assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
        assert_eq!(v.to_string(), v.as_str());
        assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{v}\""));
        assert_eq!(
            serde_json::from_str::<ProtocolVersion>(&format!("\"{v}\"")).unwrap(),
            v
        );
    }
    assert_eq!(LATEST, "2026-07-28");
    assert_eq!(ProtocolVersion::LATEST.as_str(), LATEST);
    assert_eq!(LATEST_INITIALIZE, "2025-11-25");
    assert_eq!(
        ProtocolVersion::LATEST_INITIALIZE.as_str(),
        LATEST_INITIALIZE
    );
    assert!(ProtocolVersion::V2026_07_28.is_modern());
    assert!(!ProtocolVersion::V2025_11_25.is_modern());
    assert_eq!(MODERN, [ProtocolVersion::V2026_07_28]);
    assert_eq!(
        ProtocolVersion::parse(V2025_06_18),
        Some(ProtocolVersion::V2025_06_18)
    );
    assert_eq!(
        ProtocolVersion::parse(V2025_03_26),
        Some(ProtocolVersion::V2025_03_26)
    );
    assert_eq!(
        ProtocolVersion::parse(V2024_11_05),
        Some(ProtocolVersion::V2024_11_05)
    );
    for bad in [
        "",
        "1999-01-01",
        "2025-11-25 ",
        "2026-07-29",
        "2024-10-07",
        "DRAFT-2026-v1",
    ] {
        assert_eq!(ProtocolVersion::parse(bad), None, "{bad:?}");
    }
    assert!(serde_json::from_str::<ProtocolVersion>("\"1999-01-01\"").is_err());
}

#[test]
fn versions_are_ordered_by_date() {
    let mut sorted = ProtocolVersion::ALL;
    sorted.sort();
    assert_eq!(sorted, ProtocolVersion::ALL);
    let mut by_name = ProtocolVersion::ALL;
    by_name.sort_by_key(|v| v.as_str());
    assert_eq!(by_name, ProtocolVersion::ALL);
    assert!(ProtocolVersion::V2025_03_26 < ProtocolVersion::V2025_06_18);
}

#[test]
fn supported_versions_are_the_streamable_http_ones() {
    use ProtocolVersion::*;
    assert_eq!(SUPPORTED, [V2025_11_25, V2025_06_18, V2025_03_26]);
    assert_eq!(SUPPORTED[0], ProtocolVersion::LATEST_INITIALIZE);
    for v in ProtocolVersion::ALL {
        assert_eq!(v.is_supported(), SUPPORTED.contains(&v), "{v}");
    }
    assert!(!V2024_11_05.uses_streamable_http());
}

#[test]
fn version_feature_table() {
    use ProtocolVersion::*;
    // (version, header, batching, structured, resource links, elicitation, url elicitation,
    //  tasks, icons, titles, tool annotations, cancel needs request id)
    let table = [
        (
            V2024_11_05,
            false,
            false,
            false,
            false,
            false,
            false,
            false,
            false,
            false,
            false,
            true,
        ),
        (
            V2025_03_26,
            false,
            true,
            false,
            false,
            false,
            false,
            false,
            false,
            false,
            true,
            true,
        ),
        (
            V2025_06_18,
            true,
            false,
            true,
            true,
            true,
            false,
            false,
            false,
            true,
            true,
            true,
        ),
        (
            V2025_11_25,
            true,
            false,
            true,
            true,
            true,
            true,
            true,
            true,
            true,
            true,
            false,
        ),
    ];
    for (
        v,
        header,
        batch,
        structured,
        links,
        elicit,
        url,
        tasks,
        icons,
        titles,
        annotations,
        cancel_id,
    ) in table
    {
        assert_eq!(v.requires_protocol_version_header(), header, "{v} header");
        assert_eq!(v.allows_batching(), batch, "{v} batching");
        assert_eq!(v.has_structured_content(), structured, "{v} structured");
        assert_eq!(v.has_resource_links(), links, "{v} links");
        assert_eq!(v.has_elicitation(), elicit, "{v} elicitation");
        assert_eq!(v.has_url_elicitation(), url, "{v} url elicitation");
        assert_eq!(v.has_tasks(), tasks, "{v} tasks");
        assert_eq!(v.has_icons(), icons, "{v} icons");
        assert_eq!(v.has_titles(), titles, "{v} titles");
        assert_eq!(v.has_tool_annotations(), annotations, "{v} annotations");
        assert_eq!(v.cancel_requires_request_id(), cancel_id, "{v} cancel id");
    }
}

// ---------------------------------------------------------------------------------------------
// Methods and error codes.
// ---------------------------------------------------------------------------------------------

#[test]
fn method_names() {
    assert_eq!(InitializeRequest::METHOD, "initialize");
    assert_eq!(InitializedNotification::METHOD, "notifications/initialized");
    assert_eq!(PingRequest::METHOD, "ping");
    assert_eq!(ListToolsRequest::METHOD, "tools/list");
    assert_eq!(CallToolRequest::METHOD, "tools/call");
    assert_eq!(ProgressNotification::METHOD, "notifications/progress");
    assert_eq!(CancelledNotification::METHOD, "notifications/cancelled");
    assert_eq!(LoggingMessageNotification::METHOD, "notifications/message");
    assert_eq!(
        ToolListChangedNotification::METHOD,
        "notifications/tools/list_changed"
    );
    assert_eq!(
        ResourceListChangedNotification::METHOD,
        "notifications/resources/list_changed"
    );
    assert_eq!(
        PromptListChangedNotification::METHOD,
        "notifications/prompts/list_changed"
    );
    assert_eq!(methods::SAMPLING_CREATE_MESSAGE, "sampling/createMessage");
    assert_eq!(methods::ELICITATION_CREATE, "elicitation/create");
    assert_eq!(methods::ROOTS_LIST, "roots/list");
}

#[test]
fn server_requests_and_notifications() {
    for m in [
        "ping",
        "sampling/createMessage",
        "elicitation/create",
        "roots/list",
        "tasks/get",
    ] {
        assert!(methods::is_server_request(m), "{m}");
    }
    for m in [
        "tools/call",
        "initialize",
        "notifications/progress",
        "no/such",
    ] {
        assert!(!methods::is_server_request(m), "{m}");
    }
    for m in [
        "notifications/progress",
        "notifications/cancelled",
        "notifications/message",
        "notifications/tools/list_changed",
        "notifications/elicitation/complete",
    ] {
        assert!(methods::is_server_notification(m), "{m}");
    }
    for m in [
        "notifications/initialized",
        "notifications/roots/list_changed",
        "ping",
    ] {
        assert!(!methods::is_server_notification(m), "{m}");
    }
}

#[test]
fn error_codes() {
    assert_eq!(error_code::METHOD_NOT_FOUND, -32601);
    assert_eq!(error_code::INVALID_PARAMS, -32602);
    assert_eq!(error_code::URL_ELICITATION_REQUIRED, -32042);
    assert_eq!(error_code::RESOURCE_NOT_FOUND, -32002);
    assert_eq!(error_code::name(-32601), Some("method not found"));
    assert_eq!(error_code::name(-32042), Some("URL elicitation required"));
    // The Python SDK answers a cancelled call with -32800 (py/cancel.call.txt); MCP does not
    // define it.
    assert_eq!(error_code::name(-32800), None);
}

// ---------------------------------------------------------------------------------------------
// initialize.
// ---------------------------------------------------------------------------------------------

#[test]
fn initialize_result_2025_11_25_everything() {
    let init: InitializeResult = decode_lossless(result_of(EVERYTHING_INITIALIZE).get());
    assert_eq!(init.protocol_version, "2025-11-25");
    assert_eq!(
        init.protocol_version().filter(|v| v.is_supported()),
        Some(ProtocolVersion::V2025_11_25)
    );
    assert_eq!(init.server_info.name, "mcp-servers/everything");
    assert_eq!(
        init.server_info.title.as_deref(),
        Some("Everything Reference Server")
    );
    assert_eq!(init.server_info.version, "2.0.0");
    let caps = &init.capabilities;
    assert_eq!(caps.tools.as_ref().and_then(|t| t.list_changed), Some(true));
    assert_eq!(
        caps.prompts.as_ref().and_then(|p| p.list_changed),
        Some(true)
    );
    let resources = caps.resources.as_ref().unwrap();
    assert_eq!(
        (resources.subscribe, resources.list_changed),
        (Some(true), Some(true))
    );
    assert_eq!(caps.logging, Some(JsonObject::new()));
    assert_eq!(caps.completions, Some(JsonObject::new()));
    assert!(caps.supports_task_tool_calls());
    assert_eq!(caps.tasks.as_ref().unwrap()["list"], json!({}));
    assert!(
        init.instructions
            .as_deref()
            .unwrap()
            .starts_with("# Everything Server")
    );
    assert!(init.extra.is_empty());
}

#[test]
fn initialize_result_2025_11_25_python_v1() {
    let init: InitializeResult = decode_lossless(result_of(PY_V1_INITIALIZE).get());
    assert_eq!(
        init.protocol_version().filter(|v| v.is_supported()),
        Some(ProtocolVersion::V2025_11_25)
    );
    assert_eq!(init.capabilities.experimental, Some(JsonObject::new()));
    assert_eq!(
        init.capabilities.tools.as_ref().unwrap().list_changed,
        Some(false)
    );
    assert!(!init.capabilities.supports_task_tool_calls());
    assert_eq!(init.capabilities.logging, None);
    assert_eq!(
        init.server_info,
        Implementation::new("py-test-server", "1.30.0")
    );
    assert_eq!(
        init.instructions.as_deref(),
        Some("Test server for MCP client development.")
    );
}

#[test]
fn initialize_result_2025_06_18_python() {
    let init: InitializeResult = decode_lossless(result_of(PY_INITIALIZE_2025_06_18).get());
    assert_eq!(init.protocol_version(), Some(ProtocolVersion::V2025_06_18));
    assert_eq!(
        init.protocol_version().filter(|v| v.is_supported()),
        Some(ProtocolVersion::V2025_06_18)
    );
    assert!(
        init.protocol_version()
            .filter(|v| v.is_supported())
            .unwrap()
            .requires_protocol_version_header()
    );
    assert_eq!(init.server_info.title, None);
}

#[test]
fn initialize_result_2025_03_26() {
    for payload in [EVERYTHING_INITIALIZE_2025_03_26, PY_INITIALIZE_2025_03_26] {
        let init: InitializeResult = decode_lossless(result_of(payload).get());
        let v = init
            .protocol_version()
            .filter(|v| v.is_supported())
            .unwrap();
        assert_eq!(v, ProtocolVersion::V2025_03_26);
        assert!(!v.requires_protocol_version_header());
        assert!(v.allows_batching());
        assert!(init.capabilities.tools.is_some());
    }
}

#[test]
fn initialize_result_unknown_and_legacy_versions() {
    let mut init: InitializeResult =
        serde_json::from_str(result_of(PY_INITIALIZE_2025_03_26).get()).unwrap();
    init.protocol_version = "1999-01-01".into();
    assert_eq!(init.protocol_version(), None);
    assert_eq!(init.protocol_version().filter(|v| v.is_supported()), None);
    init.protocol_version = "2024-11-05".into();
    assert_eq!(init.protocol_version(), Some(ProtocolVersion::V2024_11_05));
    assert_eq!(
        init.protocol_version().filter(|v| v.is_supported()),
        None,
        "HTTP+SSE is a different transport"
    );
}

#[test]
fn initialize_result_keeps_unknown_members_and_needs_the_required_ones() {
    let raw = r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true,"x":1},"vendor":{"a":[1]}},"serverInfo":{"name":"s","version":"1","description":"d","websiteUrl":"https://example.com","icons":[{"src":"https://example.com/i.png","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}],"build":"abc"},"_meta":{"k":"v"},"future":true}"#;
    let init: InitializeResult = decode_lossless(raw);
    assert_eq!(init.extra["future"], json!(true));
    assert_eq!(init.capabilities.extra["vendor"], json!({"a": [1]}));
    assert_eq!(
        init.capabilities.tools.as_ref().unwrap().extra["x"],
        json!(1)
    );
    let info = &init.server_info;
    assert_eq!(info.description.as_deref(), Some("d"));
    assert_eq!(info.website_url.as_deref(), Some("https://example.com"));
    assert_eq!(info.extra["build"], json!("abc"));
    let icon = &info.icons.as_ref().unwrap()[0];
    assert_eq!(icon.theme, Some(IconTheme::Dark));
    assert_eq!(icon.sizes.as_deref(), Some(&["48x48".to_owned()][..]));
    assert_eq!(init.meta.as_ref().unwrap()["k"], json!("v"));

    for missing in ["protocolVersion", "capabilities", "serverInfo"] {
        let mut v: Value = serde_json::from_str(raw).unwrap();
        v.as_object_mut().unwrap().remove(missing);
        let err = serde_json::from_value::<InitializeResult>(v)
            .unwrap_err()
            .to_string();
        assert!(err.contains(missing), "{missing}: {err}");
    }
}

#[test]
fn initialize_request_params() {
    let params: InitializeRequestParams = decode_lossless(PROBE_INITIALIZE_PARAMS);
    assert_eq!(params.protocol_version, "2025-03-26");
    assert_eq!(
        params.client_info,
        Implementation::new("curl-probe", "0.0.1")
    );
    let caps = &params.capabilities;
    assert_eq!(caps.roots.as_ref().unwrap().list_changed, Some(true));
    assert_eq!(caps.sampling, Some(JsonObject::new()));
    assert_eq!(caps.elicitation.as_ref().unwrap()["url"], json!({}));

    let ours = InitializeRequestParams::new(
        ProtocolVersion::LATEST_INITIALIZE,
        ClientCapabilities::default(),
        Implementation::new("mcpwire", "0.1.0"),
    );
    assert_eq!(
        InitializeRequest::encode_params(&ours).unwrap().get(),
        r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpwire","version":"0.1.0"}}"#
    );
    assert!(InitializeRequest::decode_params(None).is_err());
}

#[test]
fn initialized_and_list_changed_notifications_have_optional_params() {
    let none = InitializedNotification::decode_params(None).unwrap();
    assert_eq!(none, NotificationParams::default());
    assert_eq!(
        InitializedNotification::encode_params(&none).unwrap().get(),
        "{}"
    );
    let raw = RawValue::from_string(r#"{"_meta":{"a":1},"b":2}"#.to_owned()).unwrap();
    let some = ToolListChangedNotification::decode_params(Some(&raw)).unwrap();
    assert_eq!(some.meta.unwrap()["a"], json!(1));
    assert_eq!(some.extra["b"], json!(2));
    assert!(ResourceListChangedNotification::decode_params(None).is_ok());
    assert!(PromptListChangedNotification::decode_params(None).is_ok());
}

// ---------------------------------------------------------------------------------------------
// ping.
// ---------------------------------------------------------------------------------------------

#[test]
fn ping_result_is_empty() {
    for payload in [PY_PING, EVERYTHING_PING] {
        let result = PingRequest::decode_result(&result_of(payload)).unwrap();
        assert_eq!(result, EmptyResult::default());
        assert_eq!(PingRequest::encode_result(&result).unwrap().get(), "{}");
    }
    assert_eq!(
        PingRequest::decode_params(None).unwrap(),
        RequestParams::default()
    );
    // A result with members is still a valid empty result (schema `EmptyResult` = `Result`).
    let odd: EmptyResult = decode_lossless(r#"{"_meta":{"x":1},"y":2}"#);
    assert_eq!(odd.extra["y"], json!(2));
}

// ---------------------------------------------------------------------------------------------
// tools/list.
// ---------------------------------------------------------------------------------------------

#[test]
fn tools_list_everything() {
    let raw = result_of(EVERYTHING_TOOLS_LIST);
    let list = ListToolsRequest::decode_result(&raw).unwrap();
    assert_eq!(decode_lossless::<ListToolsResult>(raw.get()), list);
    // Exactly the same JSON after a round trip, not just equivalent numbers.
    assert_eq!(
        serde_json::to_value(&list).unwrap(),
        serde_json::from_str::<Value>(raw.get()).unwrap()
    );
    assert_eq!(list.next_cursor, None);
    let names: Vec<&str> = list.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), 13);
    assert_eq!(names[0], "echo");
    assert!(names.contains(&"get-structured-content"));

    let echo = &list.tools[0];
    assert_eq!(echo.title.as_deref(), Some("Echo Tool"));
    assert_eq!(echo.display_name(), "Echo Tool");
    assert_eq!(
        echo.description.as_deref(),
        Some("Echoes back the input string")
    );
    assert_eq!(echo.input_schema["type"], "object");
    assert_eq!(
        echo.input_schema["$schema"],
        "http://json-schema.org/draft-07/schema#"
    );
    assert_eq!(echo.input_schema["required"], json!(["message"]));
    let a = echo.annotations.as_ref().unwrap();
    assert_eq!(
        (
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint
        ),
        (Some(true), Some(false), Some(true), Some(false))
    );
    assert_eq!(
        echo.execution.as_ref().unwrap().task_support,
        Some(TaskSupport::Forbidden)
    );
    assert!(!echo.requires_task());
    assert!(echo.extra.is_empty());

    let structured = list
        .tools
        .iter()
        .find(|t| t.name == "get-structured-content")
        .unwrap();
    let out = structured.output_schema.as_ref().unwrap();
    assert_eq!(
        out["required"],
        json!(["temperature", "conditions", "humidity"])
    );
    assert_eq!(out["additionalProperties"], json!(false));

    let research = list
        .tools
        .iter()
        .find(|t| t.name == "simulate-research-query")
        .unwrap();
    assert!(research.requires_task());

    let gzip = list
        .tools
        .iter()
        .find(|t| t.name == "gzip-file-as-resource")
        .unwrap();
    let a = gzip.annotations.as_ref().unwrap();
    assert!(!a.read_only_hint.unwrap_or(false) && a.open_world_hint.unwrap_or(true));
}

#[test]
fn tools_list_python() {
    for payload in [PY_TOOLS_LIST, PY_V1_TOOLS_LIST] {
        let list: ListToolsResult = decode_lossless(result_of(payload).get());
        assert_eq!(list.tools.len(), 9);
        let echo = &list.tools[0];
        assert_eq!(echo.name, "echo_text");
        // `title` inside the schema is not the tool's title.
        assert_eq!(echo.title, None);
        assert_eq!(echo.display_name(), "echo_text");
        assert_eq!(echo.input_schema["title"], "echo_textArguments");
        assert_eq!(echo.annotations, None);
        assert_eq!(echo.execution, None);
        let weather = list.tools.iter().find(|t| t.name == "weather").unwrap();
        assert_eq!(weather.output_schema.as_ref().unwrap()["title"], "Weather");
        let slow = list.tools.iter().find(|t| t.name == "slow").unwrap();
        assert_eq!(
            slow.input_schema["properties"]["seconds"]["default"],
            json!(35.0)
        );
    }
}

#[test]
fn tool_with_every_member_and_unknown_ones_is_kept() {
    let raw = r#"{
        "name": "search",
        "title": "Search",
        "description": "Search the knowledge base.",
        "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        "outputSchema": {"type": "object", "properties": {"hits": {"type": "array"}}},
        "annotations": {"title": "Knowledge search", "readOnlyHint": true, "openWorldHint": false, "x-cost": "low"},
        "icons": [{"src": "data:image/png;base64,iVBORw0KGgo=", "mimeType": "image/png", "sizes": ["any"], "theme": "light"},
                  {"src": "https://example.com/i.svg", "theme": "sepia"}],
        "execution": {"taskSupport": "optional", "x-queue": "slow"},
        "_meta": {"com.example/owner": "docs-team"},
        "x-vendor": {"rank": 3, "tags": ["a", "b"]},
        "deprecated": false
    }"#;
    let tool: Tool = decode_lossless(raw);
    assert_eq!(tool.display_name(), "Search");
    assert_eq!(tool.extra.len(), 2);
    assert_eq!(
        tool.extra["x-vendor"],
        json!({"rank": 3, "tags": ["a", "b"]})
    );
    assert_eq!(tool.extra["deprecated"], json!(false));
    let a = tool.annotations.as_ref().unwrap();
    assert_eq!(a.extra["x-cost"], json!("low"));
    assert_eq!(
        (a.read_only_hint, a.destructive_hint, a.idempotent_hint),
        (Some(true), None, None)
    );
    assert_eq!(a.open_world_hint, Some(false));
    let icons = tool.icons.as_ref().unwrap();
    assert_eq!(icons[0].theme, Some(IconTheme::Light));
    assert_eq!(icons[1].theme, Some(IconTheme::Other("sepia".into())));
    let exec = tool.execution.as_ref().unwrap();
    assert_eq!(exec.task_support, Some(TaskSupport::Optional));
    assert_eq!(exec.extra["x-queue"], json!("slow"));
    assert_eq!(
        tool.meta.as_ref().unwrap()["com.example/owner"],
        json!("docs-team")
    );

    // Display precedence: title, then annotations.title, then name.
    let mut t = tool.clone();
    t.title = None;
    assert_eq!(t.display_name(), "Knowledge search");
    t.annotations = None;
    assert_eq!(t.display_name(), "search");

    // Unknown task support values are kept.
    let odd: ToolExecution = decode_lossless(r#"{"taskSupport":"sometimes"}"#);
    assert_eq!(
        odd.task_support,
        Some(TaskSupport::Other("sometimes".into()))
    );
}

#[test]
fn tool_requires_name_and_input_schema() {
    assert!(serde_json::from_str::<Tool>(r#"{"inputSchema":{"type":"object"}}"#).is_err());
    assert!(serde_json::from_str::<Tool>(r#"{"name":"x"}"#).is_err());
    assert!(
        serde_json::from_str::<Tool>(r#"{"name":"x","inputSchema":{"type":"object"}}"#).is_ok()
    );
    assert!(serde_json::from_str::<ListToolsResult>(r#"{"nextCursor":"c"}"#).is_err());
}

#[test]
fn tools_list_pagination() {
    let params = ListToolsRequestParams {
        cursor: Some("page-2".into()),
        meta: None,
    };
    assert_eq!(
        ListToolsRequest::encode_params(&params).unwrap().get(),
        r#"{"cursor":"page-2"}"#
    );
    assert_eq!(
        ListToolsRequest::decode_params(None).unwrap(),
        ListToolsRequestParams::default()
    );
    assert_eq!(
        ListToolsRequest::encode_params(&ListToolsRequestParams::default())
            .unwrap()
            .get(),
        "{}"
    );
    let page: ListToolsResult =
        decode_lossless(r#"{"tools":[],"nextCursor":"abc","_meta":{"m":1},"total":40}"#);
    assert_eq!(page.next_cursor.as_deref(), Some("abc"));
    assert_eq!(page.extra["total"], json!(40));
}

// ---------------------------------------------------------------------------------------------
// tools/call params.
// ---------------------------------------------------------------------------------------------

#[test]
fn call_params_with_progress_token_and_scope() {
    let mut args = JsonObject::new();
    args.insert("query".into(), json!("rust"));
    let mut params = CallToolRequestParams::new("search", Some(args));
    params.set_meta(
        "brain.dev/scope",
        json!({"tenant_id": "local", "session_id": "s1", "call_id": "call-9"}),
    );
    params.set_progress_token(&Id::from("call-9"));
    assert_eq!(params.progress_token(), Some(Id::from("call-9")));
    assert_eq!(
        CallToolRequest::encode_params(&params).unwrap().get(),
        // Map members come out in key order (serde_json without `preserve_order`).
        r#"{"name":"search","arguments":{"query":"rust"},"_meta":{"brain.dev/scope":{"call_id":"call-9","session_id":"s1","tenant_id":"local"},"progressToken":"call-9"}}"#
    );
    let back: CallToolRequestParams =
        decode_lossless(CallToolRequest::encode_params(&params).unwrap().get());
    assert_eq!(back, params);

    let numbered = CallToolRequestParams::new("slow", None).with_progress_token(&Id::Number(1));
    assert_eq!(
        serde_json::to_string(&numbered).unwrap(),
        r#"{"name":"slow","_meta":{"progressToken":1}}"#
    );
    assert_eq!(numbered.progress_token(), Some(Id::Number(1)));
    assert_eq!(CallToolRequestParams::new("x", None).progress_token(), None);

    let mut tasked = CallToolRequestParams::new("research", None);
    tasked.task = Some(TaskMetadata {
        ttl: Some(60_000),
        ..TaskMetadata::default()
    });
    assert_eq!(
        serde_json::to_string(&tasked).unwrap(),
        r#"{"name":"research","task":{"ttl":60000}}"#
    );
    assert!(CallToolRequest::decode_params(None).is_err());
}

#[test]
fn call_params_as_the_captures_sent_them() {
    // The `### curl` line of everything/probes/p16-unknown-tool.txt and capture.sh's progress call.
    let p: CallToolRequestParams = decode_lossless(r#"{"name":"no-such-tool","arguments":{}}"#);
    assert_eq!(p.arguments, Some(JsonObject::new()));
    let p: CallToolRequestParams = decode_lossless(
        r#"{"name":"trigger-long-running-operation","arguments":{"duration":3,"steps":3},"_meta":{"progressToken":1}}"#,
    );
    assert_eq!(p.progress_token(), Some(Id::Number(1)));
}

// ---------------------------------------------------------------------------------------------
// tools/call results: every real reply.
// ---------------------------------------------------------------------------------------------

call_cases! {
    call_text_everything: EVERYTHING_ECHO => |r| {
        assert_eq!(r.content.len(), 1);
        assert_eq!(r.content[0].as_text(), Some("Echo: hi"));
        assert_eq!(r.is_error, None);
        assert!(!r.is_error(), "absent isError means false");
        assert_eq!(r.structured_content, None);
    }
    call_text_python: PY_ECHO_TEXT => |r| {
        assert_eq!(r.content, vec![ContentBlock::Text(TextContent::new("hi"))]);
        assert_eq!(r.is_error, Some(false));
        assert!(!r.is_error());
    }
    call_is_error_everything: EVERYTHING_ECHO_MISSING_ARG => |r| {
        assert!(r.is_error());
        assert!(r.content[0].as_text().unwrap().contains("Input validation error"));
    }
    call_is_error_python: PY_FAIL => |r| {
        assert!(r.is_error());
        assert_eq!(r.content[0].as_text(), Some("Error executing tool fail: kaputt"));
    }
    call_unknown_tool_is_a_tool_error_on_everything: EVERYTHING_UNKNOWN_TOOL => |r| {
        assert!(r.is_error());
        assert_eq!(r.content[0].as_text(), Some("MCP error -32602: Tool no-such-tool not found"));
    }
    call_structured_everything: EVERYTHING_STRUCTURED => |r| {
        let s = r.structured_content.as_ref().unwrap();
        assert_eq!(s, &json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}));
        // The text block holds the same JSON, for clients without structured output.
        let text: Value = serde_json::from_str(r.content[0].as_text().unwrap()).unwrap();
        assert_eq!(&text, s);
    }
    call_structured_python: PY_WEATHER => |r| {
        assert_eq!(r.structured_content.as_ref().unwrap()["temperature_c"], json!(21.5));
        assert_eq!(r.is_error, Some(false));
    }
    call_structured_python_v1: PY_V1_WEATHER => |r| {
        assert_eq!(r.structured_content.as_ref().unwrap()["humidity"], json!(40));
    }
    call_structured_on_a_2025_03_26_session: PY_WEATHER_ON_2025_03_26 => |r| {
        assert!(!ProtocolVersion::V2025_03_26.has_structured_content());
        assert_eq!(r.structured_content.as_ref().unwrap()["city"], json!("Oslo"));
    }
    call_image_python: PY_TINY_IMAGE => |r| {
        let ContentBlock::Image(img) = &r.content[0] else { panic!("{:?}", r.content[0]) };
        assert_eq!(img.mime_type, "image/png");
        assert!(img.data.starts_with("iVBORw0KGgo"));
        assert_eq!(img.annotations, None);
    }
    call_annotated_text_and_image_everything: EVERYTHING_ANNOTATED_MESSAGE => |r| {
        let ContentBlock::Text(text) = &r.content[0] else { panic!() };
        let a = text.annotations.as_ref().unwrap();
        assert_eq!(a.audience, Some(vec![Role::User, Role::Assistant]));
        assert_eq!(a.priority, Some(1.0));
        assert_eq!(a.last_modified, None);
        let ContentBlock::Image(img) = &r.content[1] else { panic!() };
        let a = img.annotations.as_ref().unwrap();
        assert_eq!((a.audience.as_deref(), a.priority), (Some(&[Role::User][..]), Some(0.5)));
        assert!(img.data.len() > 1000);
    }
    call_mixed_content_python: PY_MIXED_CONTENT => |r| {
        assert_eq!(
            r.content.iter().map(|b| b.type_name().into_owned()).collect::<Vec<_>>(),
            ["text", "image", "resource"]
        );
        let ContentBlock::Resource(res) = &r.content[2] else { panic!() };
        let ResourceContents::Text(t) = &res.resource else { panic!() };
        assert_eq!(t.uri, "test://mixed/readme.txt");
        assert_eq!(t.mime_type.as_deref(), Some("text/plain"));
        assert_eq!(t.text, "embedded resource text");
        assert_eq!(res.resource.uri(), "test://mixed/readme.txt");
    }
    call_mixed_content_python_v1: PY_V1_MIXED_CONTENT => |r| {
        assert_eq!(r, call_result(PY_MIXED_CONTENT), "member order does not matter");
    }
    call_resource_links_everything: EVERYTHING_RESOURCE_LINKS => |r| {
        let ContentBlock::ResourceLink(link) = &r.content[1] else { panic!() };
        assert_eq!(link.name, "Blob Resource 1");
        assert_eq!(link.uri, "demo://resource/dynamic/blob/1");
        assert_eq!(link.description.as_deref(), Some("Resource 1: plaintext resource"));
        assert_eq!(link.mime_type.as_deref(), Some("text/plain"));
        assert_eq!((link.size, link.title.as_ref()), (None, None));
        assert!(link.extra.is_empty(), "the type tag is not an extra member");
        assert_eq!(r.content[2].known_type(), Some("resource_link"));
    }
    call_embedded_blob_everything: EVERYTHING_RESOURCE_REFERENCE => |r| {
        let ContentBlock::Resource(res) = &r.content[1] else { panic!() };
        let ResourceContents::Blob(b) = &res.resource else { panic!() };
        assert_eq!(b.uri, "demo://resource/dynamic/blob/2");
        assert!(b.blob.starts_with("UmVzb3VyY2Ug"));
        assert_eq!(res.resource.mime_type(), Some("text/plain"));
    }
    call_embedded_gzip_blob_everything: EVERYTHING_GZIP_DATA_URI => |r| {
        let ContentBlock::Resource(res) = &r.content[0] else { panic!() };
        assert_eq!(res.resource.mime_type(), Some("application/gzip"));
        assert!(matches!(res.resource, ResourceContents::Blob(_)));
    }
    call_after_progress_everything: EVERYTHING_PROGRESS_RESULT => |r| {
        assert!(r.content[0].as_text().unwrap().starts_with("Long running operation completed"));
    }
    call_after_logging_python: PY_LOG_RESULT => |r| {
        assert_eq!(r.content[0].as_text(), Some("sent 2 log messages"));
    }
}

// ---------------------------------------------------------------------------------------------
// Content blocks: the rules.
// ---------------------------------------------------------------------------------------------

#[test]
fn audio_block() {
    // Shape of the `audio` example in server/tools.mdx, "Audio Content".
    let b = block(
        r#"{"type":"audio","data":"UklGRiQAAABXQVZF","mimeType":"audio/wav","_meta":{"k":1}}"#,
    )
    .unwrap();
    let ContentBlock::Audio(a) = &b else {
        panic!("{b:?}")
    };
    assert_eq!(a.mime_type, "audio/wav");
    assert_eq!(a.data, "UklGRiQAAABXQVZF");
    assert_eq!(a.meta.as_ref().unwrap()["k"], json!(1));
    let again: ContentBlock = decode_lossless(&serde_json::to_string(&b).unwrap());
    assert_eq!(again, b);
}

#[test]
fn resource_link_with_every_member() {
    let raw = r#"{"type":"resource_link","uri":"file:///project/src/main.rs","name":"main.rs","title":"Main","description":"Primary application entry point","mimeType":"text/x-rust","size":1234,"annotations":{"audience":["assistant"],"priority":0.25,"lastModified":"2025-05-03T14:30:00Z"},"icons":[{"src":"https://example.com/rs.png"}],"_meta":{"a":true}}"#;
    let b: ContentBlock = decode_lossless(raw);
    let ContentBlock::ResourceLink(link) = &b else {
        panic!()
    };
    assert_eq!(link.size, Some(1234));
    assert_eq!(link.title.as_deref(), Some("Main"));
    let a = link.annotations.as_ref().unwrap();
    assert_eq!(a.last_modified.as_deref(), Some("2025-05-03T14:30:00Z"));
    assert_eq!(a.audience, Some(vec![Role::Assistant]));
    assert_eq!(
        link.icons.as_ref().unwrap()[0].src,
        "https://example.com/rs.png"
    );
}

#[test]
fn embedded_resource_keeps_members_the_schema_does_not_define() {
    // server/tools.mdx, "Embedded Resources", shows `annotations` inside `resource`; the schema
    // puts them beside it. Both are kept.
    let raw = r#"{"type":"resource","resource":{"uri":"file:///project/src/main.rs","mimeType":"text/x-rust","text":"fn main() {}","annotations":{"priority":0.7}},"annotations":{"audience":["user"]}}"#;
    let b: ContentBlock = decode_lossless(raw);
    let ContentBlock::Resource(res) = &b else {
        panic!()
    };
    let ResourceContents::Text(t) = &res.resource else {
        panic!()
    };
    assert_eq!(t.extra["annotations"], json!({"priority": 0.7}));
    assert_eq!(
        res.annotations.as_ref().unwrap().audience,
        Some(vec![Role::User])
    );
}

#[test]
fn resource_contents_are_told_apart_by_member() {
    let text: ResourceContents = decode_lossless(r#"{"uri":"a:b","text":"t"}"#);
    assert!(matches!(text, ResourceContents::Text(_)));
    let blob: ResourceContents = decode_lossless(r#"{"uri":"a:b","blob":"AA==","mimeType":"x/y"}"#);
    assert!(matches!(blob, ResourceContents::Blob(_)));
    // Both: text wins and `blob` is kept as an extra member.
    let both: ResourceContents = decode_lossless(r#"{"uri":"a:b","text":"t","blob":"AA=="}"#);
    let ResourceContents::Text(t) = both else {
        panic!()
    };
    assert_eq!(t.extra["blob"], json!("AA=="));
    for bad in [
        r#"{"uri":"a:b"}"#,
        r#"{"text":"t"}"#,
        r#"{"uri":"a:b","text":7}"#,
        "[]",
        "null",
    ] {
        assert!(
            serde_json::from_str::<ResourceContents>(bad).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn unknown_block_type_is_kept_member_by_member() {
    // Decoding is one pass, so an unknown block is rebuilt from its members, not sliced out of
    // the input: the whitespace between members goes, each member after `type` keeps its exact
    // text (`2.50`, `1e3`, the spaces inside the array).
    let raw = r#"{ "type" : "hologram", "frames": [1, 2.50, 1e3], "nested": {"z": null} }"#;
    let kept_text = r#"{"type":"hologram","frames":[1, 2.50, 1e3],"nested":{"z": null}}"#;
    let result_json =
        format!(r#"{{"content":[{{"type":"text","text":"before"}},{raw}],"isError":false}}"#);
    let result: CallToolResult = serde_json::from_str(&result_json).unwrap();
    let ContentBlock::Unknown(kept) = &result.content[1] else {
        panic!("{:?}", result.content[1])
    };
    assert_eq!(kept.get(), kept_text);
    assert_eq!(result.content[1].known_type(), None);
    assert_eq!(result.content[1].type_name(), "hologram");
    assert_eq!(
        serde_json::to_string(&result).unwrap(),
        format!(r#"{{"content":[{{"type":"text","text":"before"}},{kept_text}],"isError":false}}"#)
    );
    let again: CallToolResult =
        serde_json::from_str(&serde_json::to_string(&result).unwrap()).unwrap();
    assert_eq!(again, result);
}

#[test]
fn content_blocks_of_later_revisions_are_unknown_here() {
    // `tool_use` and `tool_result` exist only in sampling messages (2025-11-25); in a tool
    // result they are unknown blocks.
    for raw in [
        r#"{"type":"tool_use","id":"t1","name":"x","input":{}}"#,
        r#"{"type":"tool_result","toolUseId":"t1","content":[]}"#,
        r#"{"type":"TEXT","text":"case matters"}"#,
    ] {
        let b = block(raw).unwrap();
        assert!(
            matches!(&b, ContentBlock::Unknown(r) if r.get() == raw),
            "{raw}"
        );
        assert_eq!(serde_json::to_string(&b).unwrap(), raw);
    }
}

#[test]
fn known_block_types_must_fit_their_struct() {
    for (raw, needle) in [
        (r#"{"type":"image","mimeType":"image/png"}"#, "data"),
        (r#"{"type":"image","data":"AA=="}"#, "mimeType"),
        (r#"{"type":"audio","data":"AA=="}"#, "mimeType"),
        (r#"{"type":"text"}"#, "text"),
        (r#"{"type":"text","text":42}"#, "text"),
        (
            r#"{"type":"text","text":"x","annotations":{"priority":"high"}}"#,
            "text",
        ),
        (r#"{"type":"resource_link","uri":"a:b"}"#, "name"),
        (
            r#"{"type":"resource_link","name":"n","uri":"a:b","size":-1}"#,
            "resource_link",
        ),
        (r#"{"type":"resource","resource":{"uri":"a:b"}}"#, "neither"),
        (r#"{"type":"resource"}"#, "resource"),
    ] {
        let err = block_err(raw);
        assert!(err.contains(needle), "{raw}: {err}");
    }
}

#[test]
fn blocks_need_an_object_with_a_string_type() {
    for raw in [
        r#"{"text":"no type"}"#,
        r#"{"type":7}"#,
        r#"{"type":null}"#,
        r#"["text","x"]"#,
        r#""text""#,
        "null",
        "3",
    ] {
        assert!(block(raw).is_err(), "{raw}");
    }
    assert!(
        block(r#"{"type":"text","type":"image","text":"x"}"#).is_err(),
        "duplicate type"
    );
}

#[test]
fn blocks_decode_from_a_json_value_too() {
    let v = json!({"type": "text", "text": "hi", "x": 1});
    let b: ContentBlock = serde_json::from_value(v).unwrap();
    let ContentBlock::Text(t) = &b else { panic!() };
    assert_eq!(t.extra["x"], json!(1));
    let u: ContentBlock = serde_json::from_value(json!({"type": "video", "url": "u"})).unwrap();
    assert_eq!(u.type_name(), "video");
    let r: CallToolResult =
        serde_json::from_value(json!({"content": [{"type": "video"}], "structuredContent": null}))
            .unwrap();
    assert_eq!(r.structured_content, None);
}

#[test]
fn block_serialization_writes_the_tag_first_and_once() {
    let mut t = TextContent::new("hi");
    t.extra.insert("x".into(), json!(1));
    let b = ContentBlock::from(t);
    assert_eq!(
        serde_json::to_string(&b).unwrap(),
        r#"{"type":"text","text":"hi","x":1}"#
    );
    let img = ContentBlock::from(ImageContent {
        data: "AA==".into(),
        mime_type: "image/png".into(),
        ..ImageContent::default()
    });
    assert_eq!(
        serde_json::to_string(&img).unwrap(),
        r#"{"type":"image","data":"AA==","mimeType":"image/png"}"#
    );
    let res = ContentBlock::from(EmbeddedResource::new(ResourceContents::Blob(
        BlobResourceContents {
            uri: "a:b".into(),
            blob: "AA==".into(),
            ..BlobResourceContents::default()
        },
    )));
    assert_eq!(
        serde_json::to_string(&res).unwrap(),
        r#"{"type":"resource","resource":{"uri":"a:b","blob":"AA=="}}"#
    );
}

#[test]
fn call_result_rules() {
    // content is required, even when empty.
    let empty: CallToolResult = decode_lossless(r#"{"content":[]}"#);
    assert!(empty.content.is_empty() && !empty.is_error());
    let err = serde_json::from_str::<CallToolResult>(r#"{"isError":true}"#).unwrap_err();
    assert!(err.to_string().contains("content"), "{err}");
    // Duplicates are refused, known or not.
    for dup in [
        r#"{"content":[],"content":[]}"#,
        r#"{"content":[],"isError":true,"isError":false}"#,
        r#"{"content":[],"x":1,"x":2}"#,
    ] {
        let err = serde_json::from_str::<CallToolResult>(dup).unwrap_err();
        assert!(err.to_string().contains("duplicate"), "{dup}: {err}");
    }
    // Unknown members and `_meta` are kept.
    let r: CallToolResult = decode_lossless(
        r#"{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t"}},"future":[1]}"#,
    );
    assert_eq!(r.extra["future"], json!([1]));
    assert!(r.meta.as_ref().unwrap().contains_key(RELATED_TASK_KEY));
    // Wrong types are errors.
    for bad in [
        r#"{"content":{}}"#,
        r#"{"content":[],"isError":"yes"}"#,
        r#"[]"#,
        r#"{"content":[],"_meta":1}"#,
    ] {
        assert!(
            serde_json::from_str::<CallToolResult>(bad).is_err(),
            "{bad}"
        );
    }
    // A bad block fails the whole result.
    assert!(serde_json::from_str::<CallToolResult>(r#"{"content":[{"type":"image"}]}"#).is_err());
}

// ---------------------------------------------------------------------------------------------
// Notifications.
// ---------------------------------------------------------------------------------------------

fn progress(json: &str) -> ProgressNotificationParams {
    let raw = params_of(json);
    let p = ProgressNotification::decode_params(Some(&raw)).unwrap();
    assert_eq!(decode_lossless::<ProgressNotificationParams>(raw.get()), p);
    p
}

#[test]
fn progress_with_integers() {
    let p = progress(EVERYTHING_PROGRESS_1);
    assert_eq!(p.progress_token, Id::Number(1));
    assert_eq!((p.progress, p.total, p.message), (1.0, Some(3.0), None));
    let p = progress(PY_PROGRESS_2);
    assert_eq!(p.progress_token, Id::Number(1));
    assert_eq!((p.progress, p.total), (2.0, Some(3.0)));
    assert_eq!(p.message.as_deref(), Some("step 2 of 3"));
}

#[test]
fn progress_with_floats_and_string_tokens() {
    let p = progress(PY_PROGRESS_FLOAT);
    assert_eq!(p.progress_token, Id::from("p1"));
    assert_eq!((p.progress, p.total), (1.0, Some(2.0)));
    let p = progress(EVERYTHING_PROGRESS_STRING_TOKEN);
    assert_eq!(p.progress_token, Id::from("c1"));
    assert_eq!((p.progress, p.total), (5.0, Some(12.0)));
    let p: ProgressNotificationParams = decode_lossless(r#"{"progressToken":"t","progress":0.25}"#);
    assert_eq!((p.progress, p.total), (0.25, None));
}

#[test]
fn progress_rules() {
    for bad in [
        r#"{"progress":1}"#,
        r#"{"progressToken":1}"#,
        r#"{"progressToken":1.5,"progress":1}"#,
        r#"{"progressToken":null,"progress":1}"#,
        r#"{"progressToken":"t","progress":"1"}"#,
    ] {
        assert!(
            serde_json::from_str::<ProgressNotificationParams>(bad).is_err(),
            "{bad}"
        );
    }
    assert!(ProgressNotification::decode_params(None).is_err());
    let p: ProgressNotificationParams =
        decode_lossless(r#"{"progressToken":"t","progress":1,"_meta":{"a":1},"eta":5}"#);
    assert_eq!(p.extra["eta"], json!(5));
}

#[test]
fn cancelled() {
    let sent = CancelledNotificationParams::new(Id::Number(7), Some("user cancelled".into()));
    assert_eq!(
        CancelledNotification::encode_params(&sent).unwrap().get(),
        CAPTURE_CANCEL_PARAMS
    );
    let p: CancelledNotificationParams = decode_lossless(CAPTURE_CANCEL_PARAMS);
    assert_eq!(p, sent);
    let p: CancelledNotificationParams = decode_lossless(r#"{"requestId":"req-7"}"#);
    assert_eq!((p.request_id, p.reason), (Some(Id::from("req-7")), None));
    // Since 2025-11-25 requestId may be absent.
    let p: CancelledNotificationParams = decode_lossless("{}");
    assert_eq!(p.request_id, None);
    for bad in [
        r#"{"requestId":7.5}"#,
        r#"{"requestId":[7]}"#,
        r#"{"requestId":7,"reason":1}"#,
    ] {
        assert!(
            serde_json::from_str::<CancelledNotificationParams>(bad).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn logging_message() {
    let raw = params_of(PY_LOG_1);
    let p = LoggingMessageNotification::decode_params(Some(&raw)).unwrap();
    assert_eq!(
        decode_lossless::<LoggingMessageNotificationParams>(raw.get()),
        p
    );
    assert_eq!(p.level, LoggingLevel::Info);
    assert_eq!(p.data, json!("log line 1 of 2"));
    assert_eq!(p.logger, None);

    let p: LoggingMessageNotificationParams =
        decode_lossless(r#"{"level":"verbose","logger":"db","data":{"rows":3}}"#);
    assert_eq!(p.level, LoggingLevel::Other("verbose".into()));
    assert_eq!(p.level.rank(), None);
    assert_eq!(p.logger.as_deref(), Some("db"));
    let p: LoggingMessageNotificationParams = decode_lossless(r#"{"level":"error","data":null}"#);
    assert_eq!((p.level.rank(), p.data), (Some(4), Value::Null));
    assert!(
        serde_json::from_str::<LoggingMessageNotificationParams>(r#"{"level":"info"}"#).is_err()
    );
    assert!(serde_json::from_str::<LoggingMessageNotificationParams>(r#"{"data":"x"}"#).is_err());
}

#[test]
fn logging_levels_in_order() {
    let names = [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ];
    for (rank, name) in names.into_iter().enumerate() {
        let level = LoggingLevel::parse(name);
        assert_eq!(level.as_str(), name);
        assert_eq!(level.rank(), Some(rank as u8));
        assert!(!matches!(level, LoggingLevel::Other(_)));
        assert_eq!(
            serde_json::to_string(&level).unwrap(),
            format!("\"{name}\"")
        );
    }
    assert_eq!(
        LoggingLevel::parse("Info"),
        LoggingLevel::Other("Info".into())
    );
}

#[test]
fn roles_keep_unknown_values() {
    let a: Annotations = decode_lossless(r#"{"audience":["user","system"],"priority":0}"#);
    assert_eq!(
        a.audience,
        Some(vec![Role::User, Role::Other("system".into())])
    );
}

// ---------------------------------------------------------------------------------------------
// One-pass decoding: the whole message in one serde_json pass, no `flatten` buffering.
// ---------------------------------------------------------------------------------------------

/// The one-pass decoders give exactly what the two-pass path (`decode_message`, then the raw
/// params or result) gives, on every captured message.
#[test]
fn one_pass_matches_two_pass_on_captures() {
    fn same_response<M: RequestMethod>(json: &str)
    where
        M::Result: PartialEq + std::fmt::Debug,
    {
        let one = M::decode_response(json.as_bytes()).expect("one pass");
        let two = M::decode_result(&result_of(json)).expect("two passes");
        assert_eq!(one.outcome.expect("a result"), two, "{json}");
        let message = crate::jsonrpc::decode_message(json.as_bytes()).unwrap();
        assert_eq!(one.id.as_ref(), message.id());
    }
    for json in [
        EVERYTHING_INITIALIZE,
        EVERYTHING_INITIALIZE_2025_03_26,
        PY_V1_INITIALIZE,
        PY_INITIALIZE_2025_03_26,
        PY_INITIALIZE_2025_06_18,
    ] {
        same_response::<InitializeRequest>(json);
    }
    for json in [EVERYTHING_TOOLS_LIST, PY_TOOLS_LIST, PY_V1_TOOLS_LIST] {
        same_response::<ListToolsRequest>(json);
    }
    for json in [
        EVERYTHING_ECHO,
        EVERYTHING_ECHO_MISSING_ARG,
        EVERYTHING_ANNOTATED_MESSAGE,
        EVERYTHING_RESOURCE_LINKS,
        EVERYTHING_RESOURCE_REFERENCE,
        EVERYTHING_STRUCTURED,
        EVERYTHING_GZIP_DATA_URI,
        EVERYTHING_UNKNOWN_TOOL,
        PY_ECHO_TEXT,
        PY_FAIL,
        PY_MIXED_CONTENT,
        PY_V1_MIXED_CONTENT,
        PY_TINY_IMAGE,
        PY_WEATHER,
        PY_V1_WEATHER,
        PY_WEATHER_ON_2025_03_26,
        EVERYTHING_PROGRESS_RESULT,
        PY_LOG_RESULT,
    ] {
        same_response::<CallToolRequest>(json);
    }
    for json in [PY_PING, EVERYTHING_PING] {
        same_response::<PingRequest>(json);
    }
    for json in [
        EVERYTHING_PROGRESS_1,
        EVERYTHING_PROGRESS_STRING_TOKEN,
        PY_PROGRESS_2,
        PY_PROGRESS_FLOAT,
    ] {
        let one = ProgressNotification::decode_notification(json.as_bytes()).expect("one pass");
        let two = ProgressNotification::decode_params(Some(&params_of(json))).unwrap();
        assert_eq!(one, two, "{json}");
    }
    let one = LoggingMessageNotification::decode_notification(PY_LOG_1.as_bytes()).unwrap();
    let two = LoggingMessageNotification::decode_params(Some(&params_of(PY_LOG_1))).unwrap();
    assert_eq!(one, two);
}

#[test]
fn decode_notification_checks_kind_and_method() {
    use crate::jsonrpc::{DecodeError, Message, TypedDecodeError};

    // Absent params: `{}` where the method allows it, an error where it does not.
    let n = ToolListChangedNotification::decode_notification(
        br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
    )
    .unwrap();
    assert_eq!(n, NotificationParams::default());
    let err = ProgressNotification::decode_notification(
        br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#,
    )
    .unwrap_err();
    assert!(
        matches!(&err, TypedDecodeError::Payload(e) if e.to_string().contains("needs params")),
        "{err}"
    );
    // Another method, whether or not its params fit ours: handed back decoded.
    for other in [
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":1}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/other","params":{"progressToken":1,"progress":2}}"#,
    ] {
        let err = ProgressNotification::decode_notification(other.as_bytes()).unwrap_err();
        assert!(
            matches!(&err, TypedDecodeError::Unexpected(Message::Notification(n)) if n.method != "notifications/progress"),
            "{other}: {err:?}"
        );
    }
    // Another kind of message.
    let err = ProgressNotification::decode_notification(
        br#"{"jsonrpc":"2.0","id":1,"method":"notifications/progress","params":{"progressToken":1,"progress":2}}"#,
    )
    .unwrap_err();
    assert!(
        matches!(err, TypedDecodeError::Unexpected(Message::Request(_))),
        "{err:?}"
    );
    // Params of the method that do not fit: the payload error, with its place in the input.
    let err = ProgressNotification::decode_notification(
        br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1.5,"progress":2}}"#,
    )
    .unwrap_err();
    assert!(
        matches!(&err, TypedDecodeError::Payload(e) if e.column() > 60),
        "{err:?}"
    );
    // The envelope rules come first, even when the params do not fit either.
    let err = ProgressNotification::decode_notification(
        br#"{"jsonrpc":"1.0","method":"notifications/progress","params":{"progress":"x"}}"#,
    )
    .unwrap_err();
    assert!(
        matches!(err, TypedDecodeError::Invalid(DecodeError::WrongVersion)),
        "{err:?}"
    );
}

#[test]
fn decode_response_keeps_errors_and_hands_back_calls() {
    use crate::jsonrpc::{Id, Message, TypedDecodeError};

    let r = CallToolRequest::decode_response(
        br#"{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Unknown tool: x"}}"#,
    )
    .unwrap();
    assert_eq!(r.id, Some(Id::Number(4)));
    let e = r.outcome.unwrap_err();
    assert_eq!((e.code, &*e.message), (-32602, "Unknown tool: x"));
    let err = CallToolRequest::decode_response(PY_PROGRESS_2.as_bytes()).unwrap_err();
    let TypedDecodeError::Unexpected(Message::Notification(n)) = err else {
        panic!("{err:?}")
    };
    assert_eq!(n.params.unwrap().get(), params_of(PY_PROGRESS_2).get());
    let err =
        CallToolRequest::decode_response(br#"{"jsonrpc":"2.0","id":4,"result":{"isError":true}}"#)
            .unwrap_err();
    assert!(
        matches!(&err, TypedDecodeError::Payload(e) if e.to_string().contains("content")),
        "{err:?}"
    );
}

/// A member name misspelt in a hand-written decoder would land in `extra`: every known member
/// of every type must land in its field.
#[test]
fn known_members_land_in_their_fields() {
    fn all_known<T>(json: Value, extra: impl Fn(&T) -> Vec<&JsonObject>)
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        let decoded: T = serde_json::from_value(json.clone()).unwrap();
        for map in extra(&decoded) {
            assert!(map.is_empty(), "{json}: extra {map:?}");
        }
        assert_eq!(serde_json::to_value(&decoded).unwrap(), json);
    }
    let meta = json!({"k": 1});
    let icon = json!({"src": "https://x/i.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "dark"});
    let annotations =
        json!({"audience": ["user"], "priority": 0.5, "lastModified": "2025-01-12T15:00:58Z"});
    all_known::<ProgressNotificationParams>(
        json!({"progressToken": "t", "progress": 1.5, "total": 3.0, "message": "m", "_meta": meta}),
        |p| vec![&p.extra],
    );
    all_known::<CancelledNotificationParams>(
        json!({"requestId": 7, "reason": "r", "_meta": meta}),
        |p| vec![&p.extra],
    );
    all_known::<LoggingMessageNotificationParams>(
        json!({"level": "info", "logger": "l", "data": [1], "_meta": meta}),
        |p| vec![&p.extra],
    );
    all_known::<RequestParams>(json!({"_meta": meta}), |p| vec![&p.extra]);
    all_known::<NotificationParams>(json!({"_meta": meta}), |p| vec![&p.extra]);
    all_known::<EmptyResult>(json!({"_meta": meta}), |p| vec![&p.extra]);
    all_known::<Implementation>(
        json!({"name": "n", "version": "1", "title": "t", "description": "d", "websiteUrl": "https://x", "icons": [icon]}),
        |p| vec![&p.extra, &p.icons.as_ref().unwrap()[0].extra],
    );
    all_known::<Annotations>(annotations.clone(), |a| vec![&a.extra]);
    all_known::<ClientCapabilities>(
        json!({"experimental": {}, "roots": {"listChanged": true}, "sampling": {}, "elicitation": {}, "tasks": {}}),
        |c| vec![&c.extra, &c.roots.as_ref().unwrap().extra],
    );
    all_known::<InitializeResult>(
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"experimental": {}, "logging": {}, "completions": {}, "prompts": {"listChanged": true}, "resources": {"subscribe": true, "listChanged": true}, "tools": {"listChanged": true}, "tasks": {}},
            "serverInfo": {"name": "s", "version": "1"},
            "instructions": "i",
            "_meta": meta,
        }),
        |r| {
            let c = &r.capabilities;
            vec![
                &r.extra,
                &c.extra,
                &c.prompts.as_ref().unwrap().extra,
                &c.resources.as_ref().unwrap().extra,
                &c.tools.as_ref().unwrap().extra,
                &r.server_info.extra,
            ]
        },
    );
    all_known::<ListToolsResult>(
        json!({
            "tools": [{
                "name": "n", "title": "t", "description": "d",
                "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
                "annotations": {"title": "a", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
                "icons": [icon], "execution": {"taskSupport": "optional"}, "_meta": meta,
            }],
            "nextCursor": "c",
            "_meta": meta,
        }),
        |r| {
            let t = &r.tools[0];
            vec![
                &r.extra,
                &t.extra,
                &t.annotations.as_ref().unwrap().extra,
                &t.execution.as_ref().unwrap().extra,
                &t.icons.as_ref().unwrap()[0].extra,
            ]
        },
    );
    all_known::<TaskMetadata>(json!({"ttl": 5}), |t| vec![&t.extra]);
    let blocks = json!([
        {"type": "text", "text": "t", "annotations": annotations, "_meta": meta},
        {"type": "image", "data": "AA==", "mimeType": "image/png", "annotations": annotations, "_meta": meta},
        {"type": "audio", "data": "AA==", "mimeType": "audio/wav", "annotations": annotations, "_meta": meta},
        {"type": "resource_link", "uri": "a:b", "name": "n", "title": "t", "description": "d", "mimeType": "x/y", "size": 3, "annotations": annotations, "icons": [icon], "_meta": meta},
        {"type": "resource", "resource": {"uri": "a:b", "mimeType": "x/y", "text": "t", "_meta": meta}, "annotations": annotations, "_meta": meta},
        {"type": "resource", "resource": {"uri": "a:b", "mimeType": "x/y", "blob": "AA==", "_meta": meta}},
    ]);
    let decoded: Vec<ContentBlock> = serde_json::from_value(blocks.clone()).unwrap();
    assert_eq!(serde_json::to_value(&decoded).unwrap(), blocks);
    for block in &decoded {
        let extras = match block {
            ContentBlock::Text(b) => vec![&b.extra],
            ContentBlock::Image(b) => vec![&b.extra],
            ContentBlock::Audio(b) => vec![&b.extra],
            ContentBlock::ResourceLink(b) => vec![&b.extra],
            ContentBlock::Resource(b) => vec![
                &b.extra,
                match &b.resource {
                    ResourceContents::Text(t) => &t.extra,
                    ResourceContents::Blob(b) => &b.extra,
                },
            ],
            other => panic!("{other:?}"),
        };
        assert!(extras.iter().all(|e| e.is_empty()), "{block:?}");
    }
}

#[test]
fn block_members_before_type() {
    // The Python SDK writes `type` last.
    let b = block(r#"{"text":"hi","annotations":{"priority":1},"x":[1],"type":"text"}"#).unwrap();
    let ContentBlock::Text(t) = &b else {
        panic!("{b:?}")
    };
    assert_eq!(t.text, "hi");
    assert_eq!(t.annotations.as_ref().unwrap().priority, Some(1.0));
    assert_eq!(t.extra["x"], json!([1]));
    // Members before `type` must fit the type as well.
    let err = block_err(r#"{"text":42,"type":"text"}"#);
    assert!(err.contains("`text` content block"), "{err}");
    // An unknown block keeps the order; members before `type` as values, after it as text.
    let b = block(r#"{"z": 1e3, "type": "hologram", "a": 2.50}"#).unwrap();
    let ContentBlock::Unknown(kept) = &b else {
        panic!("{b:?}")
    };
    assert_eq!(kept.get(), r#"{"z":1000.0,"type":"hologram","a":2.50}"#);
    assert_eq!(b.type_name(), "hologram");
}

#[test]
fn from_raw_keeps_unknown_blocks_byte_for_byte() {
    let raw = r#"{ "type" : "hologram", "frames": [1, 2.50, 1e3] }"#;
    let b = ContentBlock::from_raw(RawValue::from_string(raw.to_owned()).unwrap()).unwrap();
    assert!(
        matches!(&b, ContentBlock::Unknown(r) if r.get() == raw),
        "{b:?}"
    );
    let t = ContentBlock::from_raw(
        RawValue::from_string(r#"{"type":"text","text":"x"}"#.to_owned()).unwrap(),
    )
    .unwrap();
    assert_eq!(t.as_text(), Some("x"));
    assert!(ContentBlock::from_raw(RawValue::from_string("[]".to_owned()).unwrap()).is_err());
}

/// A `tools/call` response read by both readers the client has (the fast typed one and
/// serde_json's), as the whole result and as `ContentOnly`.
#[cfg(feature = "client")]
fn read_both_ways(result: &str) -> [Result<(CallToolResult, CallToolResult), String>; 2] {
    let response = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
    let fast = || -> Result<_, String> {
        let whole = crate::jsonrpc::decode_response_as::<CallToolResult>(response.as_bytes())
            .map_err(|e| format!("{e:?}"))?
            .outcome
            .map_err(|e| e.message.to_string())?;
        let content = crate::jsonrpc::decode_response_as::<ContentOnly>(response.as_bytes())
            .map_err(|e| format!("{e:?}"))?
            .outcome
            .map_err(|e| e.message.to_string())?;
        Ok((whole, content.0))
    };
    let serde = || -> Result<_, String> {
        let whole: CallToolResult = serde_json::from_str(result).map_err(|e| e.to_string())?;
        let content: ContentOnly = serde_json::from_str(result).map_err(|e| e.to_string())?;
        Ok((whole, content.0))
    };
    [fast(), serde()]
}

#[cfg(feature = "client")]
#[test]
fn a_content_only_result_keeps_the_content_and_drops_meta_and_unknown_members() {
    let result = r#"{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},
        "content":[{"type":"text","text":"hi"},{"type":"text","text":"there"}],
        "structuredContent":{"n":1},"isError":false,"resultType":"complete","later":[1,{"a":2}]}"#;
    for read in read_both_ways(result) {
        let (whole, content) = read.expect("both read it");
        assert!(whole.meta.is_some());
        assert_eq!(whole.extra.len(), 2, "resultType and later");
        assert_eq!(content.meta, None);
        assert!(content.extra.is_empty());
        assert_eq!(content.content, whole.content);
        assert_eq!(content.structured_content, whole.structured_content);
        assert_eq!(content.is_error, whole.is_error);
    }
}

#[cfg(feature = "client")]
#[test]
fn a_content_only_result_is_refused_where_the_whole_one_is() {
    // Each fails to read in full for a reason ContentOnly checks too, without keeping the
    // member it is about.
    for result in [
        r#"{"content":[],"_meta":5}"#,
        r#"{"content":[],"_meta":[]}"#,
        r#"{"content":[],"_meta":{},"_meta":{}}"#,
        r#"{"content":[],"resultType":"complete","resultType":"complete"}"#,
        r#"{"content":[],"resultType":"input_required"}"#,
        r#"{"content":[],"later":1,"later":2}"#,
        r#"{"content":[{"type":"text"}]}"#,
        r#"{"_meta":{}}"#,
    ] {
        for read in read_both_ways(result) {
            assert!(read.is_err(), "{result} was read");
        }
        let content: Result<ContentOnly, _> = serde_json::from_str(result);
        assert!(content.is_err(), "{result} was read as content only");
        let response = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
        let fast = crate::jsonrpc::decode_response_as::<ContentOnly>(response.as_bytes());
        assert!(
            !matches!(fast, Ok(ref r) if r.outcome.is_ok()),
            "{result} was read as content only by the fast reader"
        );
    }
}

/// A text block's text is unescaped by mcpwire's own reader (`de::once_string`, one copy of
/// a large text): it gives what serde_json gives for a `String`, and refuses what it refuses.
#[test]
fn a_text_blocks_text_reads_as_serde_json_reads_a_string() {
    let long_lines = "x".repeat(99) + "\n";
    let texts = [
        r#""""#.to_owned(),
        r#""plain""#.to_owned(),
        r#""\"\\\/\b\f\n\r\t""#.to_owned(),
        r#""caf\u00e9 \u20AC \ud83d\ude00 \u0000 end""#.to_owned(),
        r#""\n""#.to_owned(),
        r#""é€😀 raw UTF-8 \\ after""#.to_owned(),
        serde_json::to_string(&long_lines.repeat(1000)).unwrap(),
    ];
    for text in &texts {
        let expected: String = serde_json::from_str(text).unwrap();
        for block_json in [
            format!(r#"{{"type":"text","text":{text}}}"#),
            // Before `type`, the member waits as a JSON value.
            format!(r#"{{"text":{text},"type":"text"}}"#),
        ] {
            let ContentBlock::Text(block) = block(&block_json).unwrap() else {
                panic!("{block_json}")
            };
            assert_eq!(block.text, expected, "{text}");
            assert_eq!(block.text.capacity(), block.text.len(), "{text}");
        }
    }
    for refused in [
        r#""\ud83d""#,
        r#""\ud83d\u0041""#,
        r#""\ude00""#,
        r#""\ud83dx""#,
        r#""\x""#,
        r#""\u12g4""#,
        "\"a\u{1}b\"",
        "7",
        "null",
        "[\"a\"]",
    ] {
        assert!(
            serde_json::from_str::<String>(refused).is_err(),
            "{refused}"
        );
        let block_json = format!(r#"{{"type":"text","text":{refused}}}"#);
        let error = block(&block_json).expect_err(refused).to_string();
        assert!(error.contains("text"), "{refused}: {error}");
    }
}
