//! The `Mcp-Name` and `Mcp-Param-*` headers a 2026-07-28 `tools/call` carries: from the
//! declarations of the last listing, or of the `input_schema` the caller gave for a tool not
//! listed (`2026-07-28/basic/transports/streamable-http.mdx`, the standard headers).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use http::{HeaderName, HeaderValue};

use super::OpError;
use crate::mcp::JsonObject;
use crate::mcp::headers::{self as mcp_headers, ParamHeader};

/// How many tools' `input_schema` header declarations are kept.
const MAX_SCHEMA_HEADERS: usize = 64;

/// An `input_schema` and the `Mcp-Param-*` headers it declares.
type SchemaHeaders = (Arc<serde_json::Value>, Arc<[ParamHeader]>);

const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// What a connection knows of the headers each tool's calls carry.
#[derive(Default)]
pub(crate) struct HeaderBook {
    /// The `Mcp-Param-*` headers each tool of the last listing declares.
    listed: HashMap<String, Arc<[ParamHeader]>>,
    /// The headers the last `input_schema` given for each tool declares, with that schema: a
    /// caller that passes the same schema (the same `Arc`) call after call has it read once.
    /// At most [`MAX_SCHEMA_HEADERS`] tools.
    schemas: HashMap<String, SchemaHeaders>,
    /// The `Mcp-Name` header of the tool called last, encoded once for a caller that calls one
    /// tool again and again.
    last_name: Option<(String, HeaderValue)>,
    /// The schema given last and its declarations: the same caller's next call finds them
    /// without hashing the tool's name.
    last_schema: Option<SchemaHeaders>,
}

impl HeaderBook {
    /// The declarations of a new listing replace the last one's.
    pub(crate) fn set_listed(&mut self, listed: HashMap<String, Arc<[ParamHeader]>>) {
        self.listed = listed;
    }

    /// `Mcp-Name` and the `Mcp-Param-*` headers of a call to `name` with `arguments` (read
    /// only when the tool declares any).
    pub(crate) fn call_headers<'a>(
        &mut self,
        name: &str,
        arguments: impl FnOnce() -> Option<Cow<'a, JsonObject>>,
        input_schema: Option<&Arc<serde_json::Value>>,
    ) -> Result<Vec<(HeaderName, HeaderValue)>, OpError> {
        let mut headers: Vec<_> = self.name_header(name).into_iter().collect();
        let declared = match input_schema {
            Some(schema) => Some(self.schema_headers(name, schema)?),
            None => self.listed.get(name).cloned(),
        };
        let Some(declared) = declared.filter(|declared| !declared.is_empty()) else {
            return Ok(headers);
        };
        let Some(arguments) = arguments() else {
            return Ok(headers);
        };
        for param in declared.iter() {
            if let Some(value) = param.value_in(&arguments)
                && let Ok(header) = HeaderName::from_bytes(param.header.as_bytes())
                && let Ok(value) = HeaderValue::from_str(&value)
            {
                headers.push((header, value));
            }
        }
        Ok(headers)
    }

    fn name_header(&mut self, name: &str) -> Option<(HeaderName, HeaderValue)> {
        if let Some((last, value)) = &self.last_name
            && last == name
        {
            return Some((MCP_NAME, value.clone()));
        }
        let (header, value) = mcp_name_header(name)?;
        self.last_name = Some((name.to_owned(), value.clone()));
        Some((header, value))
    }

    fn schema_headers(
        &mut self,
        name: &str,
        schema: &Arc<serde_json::Value>,
    ) -> Result<Arc<[ParamHeader]>, OpError> {
        // What a schema declares depends on the schema alone.
        if let Some((seen, declared)) = &self.last_schema
            && Arc::ptr_eq(seen, schema)
        {
            return Ok(declared.clone());
        }
        if let Some((seen, declared)) = self.schemas.get(name)
            && Arc::ptr_eq(seen, schema)
        {
            self.last_schema = Some((seen.clone(), declared.clone()));
            return Ok(declared.clone());
        }
        let declared: Arc<[ParamHeader]> =
            Arc::from(mcp_headers::param_headers(schema).map_err(|error| {
                OpError::Config(format!("the input schema of {name:?}: {error}"))
            })?);
        if self.schemas.len() >= MAX_SCHEMA_HEADERS && !self.schemas.contains_key(name) {
            self.schemas.clear();
        }
        self.schemas
            .insert(name.to_owned(), (schema.clone(), declared.clone()));
        self.last_schema = Some((schema.clone(), declared.clone()));
        Ok(declared)
    }
}

/// The `Mcp-Name` header for `name` (a tool, prompt or resource), encoded as the spec says.
pub(crate) fn mcp_name_header(name: &str) -> Option<(HeaderName, HeaderValue)> {
    HeaderValue::from_str(&mcp_headers::encode_header_value(name))
        .ok()
        .map(|value| (MCP_NAME, value))
}
