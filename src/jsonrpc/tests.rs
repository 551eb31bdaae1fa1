//! Vector tests for the JSON-RPC codec: one case per line, every rule, every shape, round trips.

use std::borrow::Cow;

use super::encode::{encode_batch, encode_batch_into, has_line_break, one_line};
use super::*;

// ---------------------------------------------------------------------------------------------
// Helpers.

fn raw(json: &str) -> Box<RawValue> {
    RawValue::from_string(json.to_owned()).unwrap()
}

fn single(message: Message<'static>) -> Packet<'static> {
    Packet::Single(message)
}

fn request(id: impl Into<Id>, method: &'static str, params: Option<&str>) -> Message<'static> {
    Message::request(id, method, params.map(raw))
}

fn notification(method: &'static str, params: Option<&str>) -> Message<'static> {
    Message::notification(method, params.map(raw))
}

fn ok(id: impl Into<Id>, result: &str) -> Message<'static> {
    Message::response_ok(id, raw(result))
}

fn err(id: Option<Id>, code: i64, message: &'static str, data: Option<&str>) -> Message<'static> {
    let mut error = ErrorObject::new(code, message);
    if let Some(data) = data {
        error = error.with_data(raw(data));
    }
    Message::response_error(id, error)
}

fn in_batch(index: usize, error: DecodeError) -> DecodeError {
    DecodeError::InBatch {
        index,
        error: Box::new(error),
    }
}

fn bytes<T: AsRef<[u8]> + ?Sized>(input: &T) -> &[u8] {
    input.as_ref()
}

/// `valid!(name, input => expected packet)`: decodes to exactly that packet, and survives the
/// round-trip harness.
macro_rules! valid {
    ($($name:ident: $input:expr => $expected:expr;)*) => {$(
        #[test]
        fn $name() {
            let input = $input;
            let input = bytes(&input);
            assert_eq!(decode(input), Ok($expected), "input: {:?}", String::from_utf8_lossy(input));
            fuzz_roundtrip(input);
        }
    )*};
}

/// `invalid!(name, input => expected error)`: refused with exactly that error.
macro_rules! invalid {
    ($($name:ident: $input:expr => $expected:expr;)*) => {$(
        #[test]
        fn $name() {
            let input = $input;
            let input = bytes(&input);
            assert_eq!(decode(input), Err($expected), "input: {:?}", String::from_utf8_lossy(input));
            fuzz_roundtrip(input);
        }
    )*};
}

/// `not_json!(name, input => "part of serde_json's message")`: refused as not JSON.
macro_rules! not_json {
    ($($name:ident: $input:expr => $needle:expr;)*) => {$(
        #[test]
        fn $name() {
            let input = $input;
            let input = bytes(&input);
            match decode(input) {
                Err(DecodeError::NotJson(message)) => {
                    assert!(message.contains($needle), "message {message:?} lacks {:?}", $needle)
                }
                other => panic!("expected NotJson for {:?}, got {other:?}", String::from_utf8_lossy(input)),
            }
            fuzz_roundtrip(input);
        }
    )*};
}

/// `reencode!(name, input => expected encoding)`: decodes, then encodes to exactly that text.
macro_rules! reencode {
    ($($name:ident: $input:expr => $expected:expr;)*) => {$(
        #[test]
        fn $name() {
            let input = $input;
            let input = bytes(&input);
            let packet = decode(input).unwrap();
            assert_eq!(packet.encode(), $expected);
            fuzz_roundtrip(input);
        }
    )*};
}

// ---------------------------------------------------------------------------------------------
// Valid shapes.

valid! {
    request_int_id: r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"# => single(request(1, "ping", None));
    request_string_id: r#"{"jsonrpc":"2.0","id":"abc","method":"ping"}"# => single(request("abc", "ping", None));
    request_empty_string_id: r#"{"jsonrpc":"2.0","id":"","method":"ping"}"# => single(request("", "ping", None));
    request_negative_id: r#"{"jsonrpc":"2.0","id":-7,"method":"ping"}"# => single(request(-7, "ping", None));
    request_zero_id: r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"# => single(request(0, "ping", None));
    request_negative_zero_id: r#"{"jsonrpc":"2.0","id":-0,"method":"ping"}"# => single(request(0, "ping", None));
    request_i64_max_id: r#"{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"}"# => single(request(i64::MAX, "ping", None));
    request_i64_min_id: r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"}"# => single(request(i64::MIN, "ping", None));
    request_numeric_string_id: r#"{"jsonrpc":"2.0","id":"1","method":"ping"}"# => single(request("1", "ping", None));
    request_object_params: r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}"# => single(request(1, "tools/call", Some(r#"{"name":"x","arguments":{}}"#)));
    request_array_params: r#"{"jsonrpc":"2.0","id":1,"method":"sum","params":[1,2,3]}"# => single(request(1, "sum", Some("[1,2,3]")));
    request_empty_params: r#"{"jsonrpc":"2.0","id":1,"method":"sum","params":[]}"# => single(request(1, "sum", Some("[]")));
    request_params_spaces_kept: r#"{"jsonrpc":"2.0","id":1,"method":"m","params": { "a" : 1 } }"# => single(request(1, "m", Some(r#"{ "a" : 1 }"#)));
    request_members_any_order: r#"{"params":{},"method":"m","id":2,"jsonrpc":"2.0"}"# => single(request(2, "m", Some("{}")));
    request_whitespace_around: " \t\r\n{ \"jsonrpc\" : \"2.0\" , \"id\" : 1 , \"method\" : \"m\" }\r\n " => single(request(1, "m", None));
    request_unknown_members_ignored: r#"{"jsonrpc":"2.0","x":[1,{"y":null}],"id":1,"method":"m","x":2,"_meta":{}}"# => single(request(1, "m", None));
    request_escaped_member_names: r#"{"\u006asonrpc":"2.0","\u0069d":1,"m\u0065thod":"m"}"# => single(request(1, "m", None));
    request_escaped_version: r#"{"jsonrpc":"2\u002e0","id":1,"method":"m"}"# => single(request(1, "m", None));
    request_method_with_escapes: r#"{"jsonrpc":"2.0","id":1,"method":"a\"b\\c\/d\n\u0000"}"# => single(request(1, "a\"b\\c/d\n\0", None));
    request_method_unicode: r#"{"jsonrpc":"2.0","id":1,"method":"héllo/世界/😀"}"# => single(request(1, "héllo/世界/😀", None));
    request_method_unicode_escapes: r#"{"jsonrpc":"2.0","id":1,"method":"\u00e9\ud83d\ude00"}"# => single(request(1, "é😀", None));
    request_empty_method: r#"{"jsonrpc":"2.0","id":1,"method":""}"# => single(request(1, "", None));
    request_string_id_escapes: r#"{"jsonrpc":"2.0","id":"a\tb\u00e9","method":"m"}"# => single(request("a\tb\u{e9}", "m", None));
    notification_without_params: r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"# => single(notification("notifications/initialized", None));
    notification_with_params: r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"# => single(notification("notifications/progress", Some(r#"{"progress":1}"#)));
    notification_array_params: r#"{"jsonrpc":"2.0","method":"n","params":["a"]}"# => single(notification("n", Some(r#"["a"]"#)));
    response_object_result: r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"# => single(ok(1, r#"{"tools":[]}"#));
    response_array_result: r#"{"jsonrpc":"2.0","id":1,"result":[1,"two",null]}"# => single(ok(1, r#"[1,"two",null]"#));
    response_null_result: r#"{"jsonrpc":"2.0","id":1,"result":null}"# => single(ok(1, "null"));
    response_number_result: r#"{"jsonrpc":"2.0","id":1,"result":-1.5e300}"# => single(ok(1, "-1.5e300"));
    response_huge_number_result: r#"{"jsonrpc":"2.0","id":1,"result":123456789012345678901234567890}"# => single(ok(1, "123456789012345678901234567890"));
    response_string_result: r#"{"jsonrpc":"2.0","id":"x","result":"done\n"}"# => single(ok("x", r#""done\n""#));
    response_bool_result: r#"{"jsonrpc":"2.0","id":1,"result":false}"# => single(ok(1, "false"));
    response_empty_object_result: r#"{"jsonrpc":"2.0","id":1,"result":{}}"# => single(ok(1, "{}"));
    response_result_first: r#"{"result":{},"id":5,"jsonrpc":"2.0"}"# => single(ok(5, "{}"));
    response_result_unicode: r#"{"jsonrpc":"2.0","id":1,"result":"\ud800 lone surrogates pass through raw"}"# => single(ok(1, r#""\ud800 lone surrogates pass through raw""#));
    error_response: r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}"# => single(err(Some(Id::Number(1)), METHOD_NOT_FOUND, "Method not found", None));
    error_response_with_data: r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad","data":{"field":"x"}}}"# => single(err(Some(Id::Number(1)), INVALID_PARAMS, "bad", Some(r#"{"field":"x"}"#)));
    error_response_scalar_data: r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":"why"}}"# => single(err(Some(Id::Number(1)), 1, "m", Some(r#""why""#)));
    error_response_null_data_kept: r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":null}}"# => single(err(Some(Id::Number(1)), 1, "m", Some("null")));
    error_response_null_id: r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"# => single(err(None, PARSE_ERROR, "Parse error", None));
    error_response_string_id: r#"{"jsonrpc":"2.0","id":"r1","error":{"code":-32603,"message":"Internal error"}}"# => single(err(Some("r1".into()), INTERNAL_ERROR, "Internal error", None));
    error_response_members_reordered: r#"{"error":{"data":[],"message":"m","code":0},"id":3,"jsonrpc":"2.0"}"# => single(err(Some(Id::Number(3)), 0, "m", Some("[]")));
    error_response_unknown_members: r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m","extra":true,"extra":1}}"# => single(err(Some(Id::Number(1)), -1, "m", None));
    error_response_negative_zero_code: r#"{"jsonrpc":"2.0","id":1,"error":{"code":-0,"message":"m"}}"# => single(err(Some(Id::Number(1)), 0, "m", None));
    error_response_message_escapes: r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"no \"tool\"\r\n"}}"# => single(err(Some(Id::Number(1)), 1, "no \"tool\"\r\n", None));
    batch_of_one: r#"[{"jsonrpc":"2.0","method":"n"}]"# => Packet::Batch(vec![notification("n", None)]);
    batch_mixed: r#"[{"jsonrpc":"2.0","id":1,"method":"a","params":[]},{"jsonrpc":"2.0","method":"b"},{"jsonrpc":"2.0","id":2,"result":7},{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}]"# => Packet::Batch(vec![request(1, "a", Some("[]")), notification("b", None), ok(2, "7"), err(None, INVALID_REQUEST, "Invalid Request", None)]);
    deep_nesting_in_result: format!(r#"{{"jsonrpc":"2.0","id":1,"result":{}{}}}"#, "[".repeat(100_000), "]".repeat(100_000)) => single(ok(1, &format!("{}{}", "[".repeat(100_000), "]".repeat(100_000))));
    deep_nesting_in_unknown_member: format!(r#"{{"jsonrpc":"2.0","method":"m","x":{}{}}}"#, "[".repeat(100_000), "]".repeat(100_000)) => single(notification("m", None));
    batch_with_whitespace: "[ {\"jsonrpc\":\"2.0\",\"method\":\"a\"} ,\n {\"jsonrpc\":\"2.0\",\"method\":\"b\"} ]" => Packet::Batch(vec![notification("a", None), notification("b", None)]);
}

// ---------------------------------------------------------------------------------------------
// Every error, with an input that triggers it.

not_json! {
    not_json_empty: "" => "EOF while parsing";
    not_json_whitespace: " \n\t " => "EOF while parsing";
    not_json_truncated: r#"{"jsonrpc":"2.0","id":1"# => "EOF while parsing";
    not_json_trailing_garbage: r#"{"jsonrpc":"2.0","method":"m"} x"# => "trailing characters";
    not_json_two_values: r#"{"jsonrpc":"2.0","method":"m"}{"jsonrpc":"2.0","method":"m"}"# => "trailing characters";
    not_json_single_quotes: "{'jsonrpc':'2.0'}" => "key must be a string";
    not_json_trailing_comma: r#"{"jsonrpc":"2.0","method":"m",}"# => "trailing comma";
    not_json_syntax_in_params: r#"{"jsonrpc":"2.0","method":"m","params":{"a":}}"# => "line 1 column";
    not_json_syntax_in_unknown_member: r#"{"jsonrpc":"2.0","method":"m","x":[1,]}"# => "expected value at line 1 column 38";
    not_json_reports_line: "{\"jsonrpc\":\"2.0\",\n\"method\":nope}" => "line 2 column";
    not_json_bad_utf8: b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}" => "invalid UTF-8 at byte 27";
    not_json_bom: "\u{feff}{\"jsonrpc\":\"2.0\",\"method\":\"m\"}" => "expected value";
    not_json_control_char_in_string: "{\"jsonrpc\":\"2.0\",\"method\":\"a\nb\"}" => "control character";
    not_json_lone_surrogate_method: r#"{"jsonrpc":"2.0","id":1,"method":"\ud800"}"# => "`method` is not a valid Unicode string: unexpected end of hex escape";
    not_json_lone_surrogate_id: r#"{"jsonrpc":"2.0","id":"\udc00","method":"m"}"# => "`id` is not a valid Unicode string: lone leading surrogate";
    not_json_lone_surrogate_error_message: r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x\ud800y"}}"# => "`error.message` is not a valid Unicode string";
    not_json_raw_newline_in_result_string: "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"a\nb\"}" => "control character";
    not_json_raw_cr_in_unknown_member: "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"x\":\"a\rb\"}" => "control character";
    not_json_bad_escape: r#"{"jsonrpc":"2.0","method":"\q"}"# => "invalid escape";
    not_json_bad_batch_element: r#"[{"jsonrpc":"2.0","method":"m"},]"# => "trailing comma";
}

invalid! {
    not_an_object_number: "5" => DecodeError::NotAnObject("a number");
    not_an_object_string: r#""{\"jsonrpc\":\"2.0\"}""# => DecodeError::NotAnObject("a string");
    not_an_object_null: "null" => DecodeError::NotAnObject("null");
    not_an_object_bool: "true" => DecodeError::NotAnObject("a boolean");
    not_an_object_in_batch: r#"[{"jsonrpc":"2.0","method":"m"},1]"# => in_batch(1, DecodeError::NotAnObject("a number"));
    not_an_object_nested_batch: r#"[[{"jsonrpc":"2.0","method":"m"}]]"# => in_batch(0, DecodeError::NotAnObject("an array"));
    not_an_object_deep_in_batch: format!("[{}{}]", "[".repeat(100_000), "]".repeat(100_000)) => in_batch(0, DecodeError::NotAnObject("an array"));
    not_an_object_null_in_batch: "[null]" => in_batch(0, DecodeError::NotAnObject("null"));
    empty_batch: "[]" => DecodeError::EmptyBatch;
    empty_batch_spaced: " [ \n ] " => DecodeError::EmptyBatch;
    duplicate_id: r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"# => DecodeError::DuplicateMember("id");
    duplicate_id_escaped: r#"{"jsonrpc":"2.0","id":1,"\u0069d":1,"method":"m"}"# => DecodeError::DuplicateMember("id");
    duplicate_version: r#"{"jsonrpc":"2.0","jsonrpc":"2.0","method":"m"}"# => DecodeError::DuplicateMember("jsonrpc");
    duplicate_method: r#"{"jsonrpc":"2.0","method":"a","method":"b"}"# => DecodeError::DuplicateMember("method");
    duplicate_params: r#"{"jsonrpc":"2.0","method":"a","params":{},"params":[]}"# => DecodeError::DuplicateMember("params");
    duplicate_result: r#"{"jsonrpc":"2.0","id":1,"result":1,"result":1}"# => DecodeError::DuplicateMember("result");
    duplicate_error: r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"},"error":{"code":1,"message":"m"}}"# => DecodeError::DuplicateMember("error");
    duplicate_error_code: r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"code":2,"message":"m"}}"# => DecodeError::DuplicateMember("error.code");
    duplicate_error_message: r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","message":"n"}}"# => DecodeError::DuplicateMember("error.message");
    duplicate_error_data: r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":1,"data":2}}"# => DecodeError::DuplicateMember("error.data");
    duplicate_in_batch: r#"[{"jsonrpc":"2.0","method":"m"},{"jsonrpc":"2.0","method":"m"},{"jsonrpc":"2.0","id":1,"id":1,"result":1}]"# => in_batch(2, DecodeError::DuplicateMember("id"));
    missing_version: r#"{"id":1,"method":"m"}"# => DecodeError::MissingVersion;
    missing_version_empty_object: "{}" => DecodeError::MissingVersion;
    missing_version_response: r#"{"id":1,"result":{}}"# => DecodeError::MissingVersion;
    missing_version_in_batch: r#"[{"jsonrpc":"2.0","method":"m"},{"method":"m"}]"# => in_batch(1, DecodeError::MissingVersion);
    wrong_version_1_0: r#"{"jsonrpc":"1.0","id":1,"method":"m"}"# => DecodeError::WrongVersion;
    wrong_version_number: r#"{"jsonrpc":2.0,"id":1,"method":"m"}"# => DecodeError::WrongVersion;
    wrong_version_short: r#"{"jsonrpc":"2","id":1,"method":"m"}"# => DecodeError::WrongVersion;
    wrong_version_padded: r#"{"jsonrpc":"2.0 ","id":1,"method":"m"}"# => DecodeError::WrongVersion;
    wrong_version_null: r#"{"jsonrpc":null,"id":1,"method":"m"}"# => DecodeError::WrongVersion;
    wrong_version_array: r#"{"jsonrpc":["2.0"],"id":1,"method":"m"}"# => DecodeError::WrongVersion;
    wrong_version_lone_surrogate: r#"{"jsonrpc":"\ud800","id":1,"method":"m"}"# => DecodeError::WrongVersion;
    method_not_string_number: r#"{"jsonrpc":"2.0","id":1,"method":1}"# => DecodeError::MethodNotString;
    method_not_string_null: r#"{"jsonrpc":"2.0","id":1,"method":null}"# => DecodeError::MethodNotString;
    method_not_string_object: r#"{"jsonrpc":"2.0","method":{}}"# => DecodeError::MethodNotString;
    missing_method: r#"{"jsonrpc":"2.0","id":1,"params":{}}"# => DecodeError::MissingMethod;
    missing_method_notification: r#"{"jsonrpc":"2.0","params":[]}"# => DecodeError::MissingMethod;
    params_null: r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"# => DecodeError::ParamsNotStructured("null");
    params_number: r#"{"jsonrpc":"2.0","id":1,"method":"m","params":1}"# => DecodeError::ParamsNotStructured("a number");
    params_string: r#"{"jsonrpc":"2.0","method":"m","params":"{}"}"# => DecodeError::ParamsNotStructured("a string");
    params_bool: r#"{"jsonrpc":"2.0","method":"m","params":true}"# => DecodeError::ParamsNotStructured("a boolean");
    invalid_id_bool: r#"{"jsonrpc":"2.0","id":true,"method":"m"}"# => DecodeError::InvalidId("a boolean");
    invalid_id_object: r#"{"jsonrpc":"2.0","id":{},"method":"m"}"# => DecodeError::InvalidId("an object");
    invalid_id_array: r#"{"jsonrpc":"2.0","id":[1],"method":"m"}"# => DecodeError::InvalidId("an array");
    invalid_id_fraction: r#"{"jsonrpc":"2.0","id":1.0,"method":"m"}"# => DecodeError::InvalidId("a number with a fraction");
    invalid_id_fraction_half: r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"# => DecodeError::InvalidId("a number with a fraction");
    invalid_id_exponent: r#"{"jsonrpc":"2.0","id":1e2,"method":"m"}"# => DecodeError::InvalidId("a number with an exponent");
    invalid_id_exponent_upper: r#"{"jsonrpc":"2.0","id":1E2,"method":"m"}"# => DecodeError::InvalidId("a number with an exponent");
    invalid_id_above_i64: r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"m"}"# => DecodeError::InvalidId("an integer outside the i64 range");
    invalid_id_u64_max: r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"m"}"# => DecodeError::InvalidId("an integer outside the i64 range");
    invalid_id_below_i64: r#"{"jsonrpc":"2.0","id":-9223372036854775809,"method":"m"}"# => DecodeError::InvalidId("an integer outside the i64 range");
    invalid_id_on_response: r#"{"jsonrpc":"2.0","id":2.5,"result":1}"# => DecodeError::InvalidId("a number with a fraction");
    invalid_id_on_error_response: r#"{"jsonrpc":"2.0","id":false,"error":{"code":1,"message":"m"}}"# => DecodeError::InvalidId("a boolean");
    null_id_on_request: r#"{"jsonrpc":"2.0","id":null,"method":"m"}"# => DecodeError::NullIdOnRequest;
    method_with_result: r#"{"jsonrpc":"2.0","id":1,"method":"m","result":1}"# => DecodeError::MethodWithResult { request: "method", response: "result" };
    method_with_error: r#"{"jsonrpc":"2.0","id":1,"method":"m","error":{"code":1,"message":"m"}}"# => DecodeError::MethodWithResult { request: "method", response: "error" };
    params_with_result: r#"{"jsonrpc":"2.0","id":1,"params":{},"result":1}"# => DecodeError::MethodWithResult { request: "params", response: "result" };
    non_string_method_with_result: r#"{"jsonrpc":"2.0","id":1,"method":1,"result":null}"# => DecodeError::MethodWithResult { request: "method", response: "result" };
    result_and_error: r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}"# => DecodeError::ResultAndError;
    result_and_null_error: r#"{"jsonrpc":"2.0","id":1,"result":1,"error":null}"# => DecodeError::ResultAndError;
    neither_result_nor_error: r#"{"jsonrpc":"2.0","id":1}"# => DecodeError::NeitherResultNorError;
    neither_anything: r#"{"jsonrpc":"2.0","x":1}"# => DecodeError::NeitherResultNorError;
    missing_id_result: r#"{"jsonrpc":"2.0","result":{}}"# => DecodeError::MissingId;
    missing_id_error: r#"{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}"# => DecodeError::MissingId;
    null_id_with_result: r#"{"jsonrpc":"2.0","id":null,"result":{}}"# => DecodeError::NullIdWithResult;
    error_object_null: r#"{"jsonrpc":"2.0","id":1,"error":null}"# => DecodeError::InvalidErrorObject("not an object");
    error_object_array: r#"{"jsonrpc":"2.0","id":1,"error":[-32600,"m"]}"# => DecodeError::InvalidErrorObject("not an object");
    error_object_string: r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"# => DecodeError::InvalidErrorObject("not an object");
    error_object_no_code: r#"{"jsonrpc":"2.0","id":1,"error":{"message":"m"}}"# => DecodeError::InvalidErrorObject("no `code` member");
    error_object_string_code: r#"{"jsonrpc":"2.0","id":1,"error":{"code":"-32600","message":"m"}}"# => DecodeError::InvalidErrorObject("`code` is not a number");
    error_object_null_code: r#"{"jsonrpc":"2.0","id":1,"error":{"code":null,"message":"m"}}"# => DecodeError::InvalidErrorObject("`code` is not a number");
    error_object_fraction_code: r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600.5,"message":"m"}}"# => DecodeError::InvalidErrorObject("`code` is not an integer in the i64 range");
    error_object_exponent_code: r#"{"jsonrpc":"2.0","id":1,"error":{"code":1e3,"message":"m"}}"# => DecodeError::InvalidErrorObject("`code` is not an integer in the i64 range");
    error_object_huge_code: r#"{"jsonrpc":"2.0","id":1,"error":{"code":99999999999999999999,"message":"m"}}"# => DecodeError::InvalidErrorObject("`code` is not an integer in the i64 range");
    error_object_no_message: r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"# => DecodeError::InvalidErrorObject("no `message` member");
    error_object_number_message: r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":5}}"# => DecodeError::InvalidErrorObject("`message` is not a string");
    error_object_null_message: r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":null}}"# => DecodeError::InvalidErrorObject("`message` is not a string");
    error_object_in_batch: r#"[{"jsonrpc":"2.0","id":1,"result":1},{"jsonrpc":"2.0","id":2,"error":{}}]"# => in_batch(1, DecodeError::InvalidErrorObject("no `code` member"));
    first_bad_batch_element_wins: r#"[{"jsonrpc":"2.0","method":"m"},{"jsonrpc":"1.0","method":"m"},{}]"# => in_batch(1, DecodeError::WrongVersion);
}

#[test]
fn decode_message_refuses_batches() {
    let batch = br#"[{"jsonrpc":"2.0","method":"m"}]"#;
    assert_eq!(decode_message(batch), Err(DecodeError::UnexpectedBatch));
    assert_eq!(decode_message(b"[]"), Err(DecodeError::EmptyBatch));
    let single = br#"{"jsonrpc":"2.0","method":"m"}"#;
    assert_eq!(decode_message(single), Ok(notification("m", None)));
}

#[test]
fn decode_str_matches_decode() {
    let input = r#"{"jsonrpc":"2.0","id":"é","result":[]}"#;
    assert_eq!(decode_str(input), decode(input.as_bytes()));
    assert_eq!(decode_str(input), Ok(single(ok("é", "[]"))));
}

#[test]
fn error_codes_and_batch_index() {
    assert_eq!(decode(b"{").unwrap_err().code(), PARSE_ERROR);
    assert_eq!(decode(b"{}").unwrap_err().code(), INVALID_REQUEST);
    let e = decode(br#"[{"jsonrpc":"2.0","method":"m"},{}]"#).unwrap_err();
    assert_eq!(e.batch_index(), Some(1));
    assert_eq!(e.code(), INVALID_REQUEST);
    assert_eq!(e.to_string(), "batch element 1: missing member `jsonrpc`");
    assert_eq!(decode(b"{}").unwrap_err().batch_index(), None);
}

#[test]
fn display_is_precise() {
    let cases = [
        (DecodeError::EmptyBatch, "empty batch"),
        (
            DecodeError::DuplicateMember("error.code"),
            "duplicate member `error.code`",
        ),
        (
            DecodeError::InvalidId("a boolean"),
            "`id` must be a string or an i64 integer, found a boolean",
        ),
        (
            DecodeError::MethodWithResult {
                request: "params",
                response: "error",
            },
            "request member `params` mixed with response member `error`",
        ),
        (
            DecodeError::ParamsNotStructured("null"),
            "`params` must be an object or an array, found null",
        ),
        (
            DecodeError::WrongVersion,
            "`jsonrpc` is not the string \"2.0\"",
        ),
    ];
    for (error, text) in cases {
        assert_eq!(error.to_string(), text);
    }
    let e = decode(b"{\"jsonrpc\":\"2.0\",\n  }").unwrap_err();
    assert_eq!(e.to_string(), "not JSON: trailing comma at line 2 column 3");
}

// ---------------------------------------------------------------------------------------------
// Borrowing: decoded values point into the input.

fn points_into(input: &[u8], s: &str) -> bool {
    input.as_ptr_range().contains(&s.as_ptr())
}

#[test]
fn decoded_members_borrow_from_input() {
    let input = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"big":[1,2,3]}}"#;
    let Ok(Packet::Single(Message::Request(r))) = decode(input) else {
        panic!()
    };
    assert!(matches!(r.method, Cow::Borrowed(m) if points_into(input, m)));
    assert!(matches!(r.params, Some(Cow::Borrowed(p)) if points_into(input, p.get())));

    let input = br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"plain","data":[1]}}"#;
    let Ok(Packet::Single(Message::Response(r))) = decode(input) else {
        panic!()
    };
    let Err(e) = r.outcome else { panic!() };
    assert!(matches!(e.message, Cow::Borrowed(m) if points_into(input, m)));
    assert!(matches!(e.data, Some(Cow::Borrowed(d)) if points_into(input, d.get())));
}

#[test]
fn escaped_method_is_owned() {
    let input = br#"{"jsonrpc":"2.0","method":"a\/b"}"#;
    let Ok(Packet::Single(Message::Notification(n))) = decode(input) else {
        panic!()
    };
    assert!(matches!(n.method, Cow::Owned(ref m) if m == "a/b"));
}

#[test]
fn one_mebibyte_result_is_borrowed_and_copied_once() {
    let payload = format!("\"{}\"", "x".repeat(1 << 20));
    let input = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{payload}}}"#);
    let message = decode_message(input.as_bytes()).unwrap();
    let Message::Response(Response {
        outcome: Ok(Cow::Borrowed(result)),
        ..
    }) = &message
    else {
        panic!("borrowed result")
    };
    assert_eq!(result.get().len(), payload.len());
    assert_eq!(message.encode(), input);
}

#[test]
fn into_owned_outlives_input() {
    let owned = {
        let input = String::from(
            r#"[{"jsonrpc":"2.0","id":1,"method":"m","params":[1]},{"jsonrpc":"2.0","id":2,"error":{"code":3,"message":"e","data":4}}]"#,
        );
        decode_str(&input).unwrap().into_owned()
    };
    assert_eq!(
        owned,
        Packet::Batch(vec![
            request(1, "m", Some("[1]")),
            err(Some(Id::Number(2)), 3, "e", Some("4"))
        ])
    );
    assert_eq!(owned.clone().into_messages().len(), 2);
}

#[test]
fn accessors() {
    assert_eq!(request(4, "m", None).method(), Some("m"));
    assert_eq!(request(4, "m", None).id(), Some(&Id::Number(4)));
    assert_eq!(notification("n", None).method(), Some("n"));
    assert_eq!(notification("n", None).id(), None);
    assert_eq!(ok("r", "1").method(), None);
    assert_eq!(ok("r", "1").id(), Some(&Id::from("r")));
    assert_eq!(err(None, 1, "m", None).id(), None);
    assert_eq!(single(ok(1, "1")).into_messages(), vec![ok(1, "1")]);
}

#[test]
fn equality_compares_raw_text() {
    assert_ne!(ok(1, r#"{"a":1}"#), ok(1, r#"{"a": 1}"#));
    assert_ne!(request(1, "m", None), request(1, "m", Some("{}")));
    assert_ne!(ok(1, "null"), err(Some(Id::Number(1)), 0, "null", None));
    assert_ne!(err(None, 1, "m", None), err(None, 1, "m", Some("null")));
    assert_eq!(err(None, 1, "m", Some("[]")), err(None, 1, "m", Some("[]")));
}

// ---------------------------------------------------------------------------------------------
// Encoding.

#[test]
fn encodes_constructed_messages() {
    let cases = [
        (
            request(1, "ping", None),
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        ),
        (
            request(-3, "m", Some("[1, 2]")),
            r#"{"jsonrpc":"2.0","id":-3,"method":"m","params":[1, 2]}"#,
        ),
        (
            request(i64::MIN, "m", None),
            r#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"m"}"#,
        ),
        (
            request("a\"b", "m\\n", None),
            r#"{"jsonrpc":"2.0","id":"a\"b","method":"m\\n"}"#,
        ),
        // The DEL character (0x7f) is not escaped, as in serde_json.
        (
            request(1, "\u{1}\n\u{7f}é", None),
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\\u0001\\n\u{7f}é\"}",
        ),
        (notification("n", None), r#"{"jsonrpc":"2.0","method":"n"}"#),
        (
            notification("n", Some(r#"{"x":"y"}"#)),
            r#"{"jsonrpc":"2.0","method":"n","params":{"x":"y"}}"#,
        ),
        (ok(7, "null"), r#"{"jsonrpc":"2.0","id":7,"result":null}"#),
        (
            ok("s", r#""v""#),
            r#"{"jsonrpc":"2.0","id":"s","result":"v"}"#,
        ),
        (
            err(None, PARSE_ERROR, "Parse error", None),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        ),
        (
            err(
                Some(Id::Number(2)),
                -32000,
                "tab\there",
                Some(r#"{"k":[]}"#),
            ),
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"tab\there","data":{"k":[]}}}"#,
        ),
    ];
    for (message, expected) in cases {
        assert_eq!(message.encode(), expected);
        let mut buf = b"prefix".to_vec();
        message.encode_into(&mut buf);
        assert_eq!(buf, [b"prefix".as_slice(), expected.as_bytes()].concat());
        assert_eq!(decode_message(expected.as_bytes()), Ok(message));
    }
}

#[test]
fn string_escaping_matches_serde_json() {
    for s in [
        "",
        "plain",
        "q\"uote",
        "back\\slash",
        "\u{0}\u{1f} ",
        "\u{7f}\u{2028}\u{2029}",
        "😀\r\n\t\u{8}\u{c}/",
    ] {
        let encoded = Message::notification(s, None).encode();
        let expected = format!(
            r#"{{"jsonrpc":"2.0","method":{}}}"#,
            serde_json::to_string(s).unwrap()
        );
        assert_eq!(encoded, expected);
        assert!(!has_line_break(&encoded));
    }
}

#[test]
fn encodes_batches() {
    let messages = [
        request(1, "a", Some("{}")),
        notification("b", None),
        ok(1, "[]"),
    ];
    let expected = concat!(
        r#"[{"jsonrpc":"2.0","id":1,"method":"a","params":{}},"#,
        r#"{"jsonrpc":"2.0","method":"b"},"#,
        r#"{"jsonrpc":"2.0","id":1,"result":[]}]"#,
    );
    assert_eq!(encode_batch(&messages), expected);
    let mut buf = Vec::new();
    encode_batch_into(&messages, &mut buf);
    assert_eq!(buf, expected.as_bytes());
    assert_eq!(Packet::Batch(messages.to_vec()).encode(), expected);
    assert_eq!(
        decode(expected.as_bytes()),
        Ok(Packet::Batch(messages.to_vec()))
    );
    assert_eq!(
        encode_batch(&messages[..1]),
        format!("[{}]", messages[0].encode())
    );
    assert_eq!(encode_batch(&[]), "[]");
}

reencode! {
    reencode_canonical_request: r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,2]}}"# => r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,2]}}"#;
    reencode_reorders_members: r#"{"params":[],"method":"m","id":"x","jsonrpc":"2.0"}"# => r#"{"jsonrpc":"2.0","id":"x","method":"m","params":[]}"#;
    reencode_drops_unknown_members: r#"{"jsonrpc":"2.0","id":1,"result":1,"extra":{"a":1}}"# => r#"{"jsonrpc":"2.0","id":1,"result":1}"#;
    reencode_drops_outer_whitespace: "  {\"jsonrpc\" : \"2.0\",\t\"method\" : \"m\" , \"params\" : [ 1 ] }  " => r#"{"jsonrpc":"2.0","method":"m","params":[ 1 ]}"#;
    reencode_unescapes_strings: r#"{"jsonrpc":"2\u002e0","id":"\u0061","method":"\/\u00e9"}"# => r#"{"jsonrpc":"2.0","id":"a","method":"/é"}"#;
    reencode_keeps_raw_escapes: r#"{"jsonrpc":"2.0","id":1,"result":"\u00e9\/\n"}"# => r#"{"jsonrpc":"2.0","id":1,"result":"\u00e9\/\n"}"#;
    reencode_negative_zero_id: r#"{"jsonrpc":"2.0","id":-0,"result":0}"# => r#"{"jsonrpc":"2.0","id":0,"result":0}"#;
    reencode_error_order: r#"{"id":null,"error":{"data":1,"message":"m","code":5},"jsonrpc":"2.0"}"# => r#"{"jsonrpc":"2.0","id":null,"error":{"code":5,"message":"m","data":1}}"#;
    reencode_pretty_params: "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1,\n  \"method\": \"m\",\n  \"params\": {\n    \"a\": [\n      1,\n      \"x y\\n\"\n    ]\n  }\n}\n" => r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,"x y\n"]}}"#;
    reencode_pretty_result_crlf: "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\r\n\t\"a\" : \"b \\\" c\",\r\n\t\"d\" : [ ]\r\n}}" => r#"{"jsonrpc":"2.0","id":1,"result":{"a":"b \" c","d":[]}}"#;
    reencode_pretty_error_data: "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"m\",\"data\":[\r 1 ,\r 2 ]}}" => r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":[1,2]}}"#;
    reencode_spaces_without_newline_kept: r#"{"jsonrpc":"2.0","id":1,"result":{ "a" : [ 1 , 2 ] }}"# => r#"{"jsonrpc":"2.0","id":1,"result":{ "a" : [ 1 , 2 ] }}"#;
    reencode_pretty_batch: "[\n  {\"jsonrpc\": \"2.0\", \"method\": \"a\", \"params\": [\n 1\n]},\n  {\"jsonrpc\": \"2.0\", \"id\": 1, \"result\": {}}\n]" => r#"[{"jsonrpc":"2.0","method":"a","params":[1]},{"jsonrpc":"2.0","id":1,"result":{}}]"#;
}

#[test]
fn serde_json_pretty_output_encodes_to_one_line() {
    let value = serde_json::json!({
        "content": [{"type": "text", "text": "line one\nline two\r\n\"quoted\" {braces} [brackets]"}],
        "structuredContent": {"n": -1.25e-3, "list": [true, false, null, {}], "empty": []},
        "isError": false
    });
    let pretty = serde_json::to_string_pretty(&value).unwrap();
    let input = format!("{{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 9,\n  \"result\": {pretty}\n}}");
    let encoded = decode_str(&input).unwrap().encode();
    assert!(!encoded.contains(['\n', '\r']));
    let expected = format!(
        r#"{{"jsonrpc":"2.0","id":9,"result":{}}}"#,
        serde_json::to_string(&value).unwrap()
    );
    assert_eq!(encoded, expected);
    fuzz_roundtrip(input.as_bytes());
}

// ---------------------------------------------------------------------------------------------
// Minifier and line-break scan, against references.

/// A small deterministic generator (xorshift64*), so the property tests need no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn random_string(rng: &mut Rng) -> String {
    const PIECES: &[&str] = &[
        "a", " ", "\n", "\r", "\t", "\"", "\\", "\\n", "{", "]", ",", ":", "é", "😀", "\u{0}",
        "\u{2028}",
    ];
    (0..rng.below(6))
        .map(|_| PIECES[rng.below(PIECES.len())])
        .collect()
}

fn random_value(rng: &mut Rng, depth: usize) -> serde_json::Value {
    use serde_json::Value;
    match rng.below(if depth > 3 { 5 } else { 7 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.below(2) == 0),
        2 => Value::from(rng.next() as i64),
        3 => Value::from((rng.next() % 10_000) as f64 / 7.0),
        4 => Value::String(random_string(rng)),
        5 => Value::Array(
            (0..rng.below(4))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        _ => Value::Object(
            (0..rng.below(4))
                .map(|_| (random_string(rng), random_value(rng, depth + 1)))
                .collect(),
        ),
    }
}

#[test]
fn minifier_matches_serde_json_compact_output() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..2000 {
        let value = random_value(&mut rng, 0);
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        let compact = serde_json::to_string(&value).unwrap();
        let minified = one_line(&pretty);
        if pretty.contains('\n') {
            assert_eq!(minified, compact, "pretty: {pretty}");
        } else {
            assert_eq!(minified, pretty);
        }
        // With carriage returns and tabs as well.
        let crlf = pretty.replace('\n', "\r\n\t");
        if crlf.contains('\r') {
            assert_eq!(one_line(&crlf), compact);
        }
    }
}

#[test]
fn minifier_cases() {
    let cases = [
        ("[\n1,\n2\n]", "[1,2]"),
        (
            "{\n\"a b\" :\t\"c\\\\\" ,\r\n\"d\":\"\\\"e f\\\\\\\"\"\n}",
            "{\"a b\":\"c\\\\\",\"d\":\"\\\"e f\\\\\\\"\"}",
        ),
        ("\"only a string\"", "\"only a string\""),
        ("[ 1 ]", "[ 1 ]"),
        ("[\r]", "[]"),
        ("{\"é\" :\n \"😀 \\u00e9\"}", "{\"é\":\"😀 \\u00e9\"}"),
    ];
    for (input, expected) in cases {
        assert_eq!(one_line(input), expected, "input {input:?}");
    }
}

#[test]
fn line_break_scan_matches_naive() {
    let mut rng = Rng(42);
    for len in 0..300 {
        let mut text: Vec<u8> = (0..len).map(|_| b'a' + (rng.below(26) as u8)).collect();
        assert!(!has_line_break(std::str::from_utf8(&text).unwrap()));
        if len > 0 {
            let at = rng.below(len);
            text[at] = if rng.below(2) == 0 { b'\n' } else { b'\r' };
            assert!(
                has_line_break(std::str::from_utf8(&text).unwrap()),
                "len {len} at {at}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The fuzz harness over a seed corpus and deterministic mutations of it.

const SEEDS: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2.5,"s"]}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":0.5}}"#,
    r#"{"jsonrpc":"2.0","id":"s-1","result":{"content":[{"type":"text","text":"hi\nthere"}]}}"#,
    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":null}}"#,
    "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[\n1,\n2\n]},{\"jsonrpc\":\"2.0\",\"method\":\"n\"}]",
    "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": -9223372036854775808,\n  \"error\": {\"code\": 1, \"message\": \"\\u00e9\", \"data\": {\r\n\"k\": \" \\\" \"\r\n}}\n}",
    r#"{"jsonrpc":"2\u002e0","\u0069d":"\ud83d\ude00","method":"\/m"}"#,
];

#[test]
fn fuzz_harness_accepts_seeds() {
    for seed in SEEDS {
        assert!(decode(seed.as_bytes()).is_ok(), "seed {seed}");
        fuzz_roundtrip(seed.as_bytes());
    }
}

#[test]
fn fuzz_harness_survives_mutations() {
    const BYTES: &[u8] = b" \n\r\t{}[],:\"\\01-.eE9anultrufs";
    let mut rng = Rng(0xDEAD_BEEF_CAFE_F00D);
    let mut accepted = 0;
    for round in 0..20_000 {
        let mut data = SEEDS[round % SEEDS.len()].as_bytes().to_vec();
        for _ in 0..=rng.below(3) {
            let at = rng.below(data.len() + 1);
            match rng.below(5) {
                0 if at < data.len() => data[at] = BYTES[rng.below(BYTES.len())],
                1 => data.insert(at, BYTES[rng.below(BYTES.len())]),
                2 if at < data.len() => {
                    data.remove(at);
                }
                3 => {
                    let other = SEEDS[rng.below(SEEDS.len())].as_bytes();
                    let from = rng.below(other.len());
                    let to = (from + rng.below(24)).min(other.len());
                    data.splice(at..at, other[from..to].iter().copied());
                }
                _ if at < data.len() => data[at] = rng.next() as u8,
                _ => {}
            }
        }
        if decode(&data).is_ok() {
            accepted += 1;
        }
        fuzz_roundtrip(&data);
    }
    assert!(
        accepted > 500,
        "mutations too destructive: {accepted} accepted"
    );
}

// ---------------------------------------------------------------------------------------------
// One-pass typed decoding.

#[test]
fn typed_decoders_agree_with_decode_message() {
    // The edges of the hand-written envelope reader and of the serde pass behind it:
    // `fuzz_roundtrip` checks that `decode_notification_as` and `decode_response_as` agree with
    // `decode_message` on each (the same error, the same message, the same payload).
    let long_params = format!(
        r#"{{"jsonrpc":"2.0","method":"m","params":{{"a":"{}"}}}}"#,
        "x".repeat(20_000)
    );
    let inputs = [
        r#"{"jsonrpc":"2.0","method":"m","params":{"a":1}}"#,
        " {\n \"jsonrpc\" : \"2.0\" ,\t\"method\":\"m\" ,\"params\":[1] } \n",
        r#"{"params":{"a":1},"method":"m","jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"2.0","method":"m"}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":{}}"#,
        "{}",
        "{ }",
        r#"{"jsonrpc":"2.0","id":0,"result":null}"#,
        r#"{"jsonrpc":"2.0","id":-0,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":01,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":-,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":--1,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":1-,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":1.0,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":1e2,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":9223372036854775807,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":9223372036854775808,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":-9223372036854775808,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":null,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":nul,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":nullx,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":true,"result":1}"#,
        r#"{"jsonrpc":"2.0","id":"a\"b","result":1}"#,
        r#"{"jsonrpc":"2.0","id":"é","result":"ü"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1,}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1}x"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1} {}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1"#,
        r#"{"jsonrpc":"2.0","id":1,"result":tru}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1 2}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1x}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":"x","result":"y"}"#,
        r#"{"jsonrpc":"2.0","id":1,"id":2,"result":1}"#,
        r#"{"jsonrpc":"2.0","jsonrpc":"2.0","method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1,"error":null}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","result":1}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":"s"}"#,
        r#"{"jsonrpc":"2.0","params":[]}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":[1,2],"extra":true}"#,
        r#"{"jsonrpc":"2.0","method":"m\u0041","params":[]}"#,
        r#"{"jsonrpc":"2.0","meth\u006fd":"m","params":[]}"#,
        "{\"jsonrpc\":\"2.0\",\"method\":\"m\tx\"}",
        r#"{"jsonrpc":"2.1","method":"m"}"#,
        r#"{"jsonrpc":"2.0 ","method":"m"}"#,
        r#"{"jsonrpc":2.0,"method":"m"}"#,
        r#"{"jsonrpc":"2\u002e0","method":"m"}"#,
        r#"{"jsonrpc":"2.0","method":5}"#,
        r#"{"jsonrpc":"2.0","method":"\ud800"}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":{"a":[1e400]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1e400}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":"\ud800"}"#,
        r#"{"jsonrpc":"2.0","method":"m","params":{"\ud800":1}}"#,
        r#"[{"jsonrpc":"2.0","method":"m"}]"#,
        "[]",
        "\"just a string\"",
        "",
        &long_params,
    ];
    for input in inputs {
        fuzz_roundtrip(input.as_bytes());
    }
    fuzz_roundtrip(b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}");
}

#[derive(Debug, PartialEq, serde::Deserialize)]
struct Progress {
    progress: f64,
    #[serde(default)]
    message: Option<String>,
}

#[test]
fn decode_notification_as_reads_params_in_place() {
    let n = decode_notification_as::<Progress>(
        br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":2,"message":"m","other":1}}"#,
    )
    .unwrap();
    assert!(matches!(n.method, Cow::Borrowed("notifications/progress")));
    assert_eq!(
        n.params,
        Some(Progress {
            progress: 2.0,
            message: Some("m".into())
        })
    );
    // Absent params are `None`; an array fits a sequence type.
    let n = decode_notification_as::<Progress>(br#"{"jsonrpc":"2.0","method":"m"}"#).unwrap();
    assert_eq!(n.params, None);
    let n = decode_notification_as::<Vec<u8>>(br#"{"jsonrpc":"2.0","method":"m","params":[1,2]}"#)
        .unwrap();
    assert_eq!(n.params, Some(vec![1, 2]));
    // Params that do not fit: serde_json's error, placed in the whole input.
    let Err(TypedDecodeError::Payload(e)) = decode_notification_as::<Progress>(
        br#"{"jsonrpc":"2.0","method":"m","params":{"progress":"x"}}"#,
    ) else {
        panic!()
    };
    assert_eq!((e.line(), e.column()), (1, 54));
    // The envelope rules win over the payload.
    assert!(matches!(
        decode_notification_as::<Progress>(br#"{"jsonrpc":"2.0","method":"m","params":null}"#),
        Err(TypedDecodeError::Invalid(DecodeError::ParamsNotStructured(
            "null"
        )))
    ));
    assert!(matches!(
        decode_notification_as::<Progress>(br#"{"method":"m","params":{"progress":"x"}}"#),
        Err(TypedDecodeError::Invalid(DecodeError::MissingVersion))
    ));
    // Other kinds come back decoded.
    let Err(TypedDecodeError::Unexpected(Message::Response(r))) =
        decode_notification_as::<Progress>(br#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}"#)
    else {
        panic!()
    };
    assert_eq!(r.outcome.unwrap().get(), r#"{"a":1}"#);
    let Err(TypedDecodeError::Unexpected(Message::Request(r))) = decode_notification_as::<Progress>(
        br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"progress":1}}"#,
    ) else {
        panic!()
    };
    assert_eq!(r.params.unwrap().get(), r#"{"progress":1}"#);
}

#[test]
fn decode_response_as_reads_the_result_in_place() {
    let r =
        decode_response_as::<Progress>(br#"{"jsonrpc":"2.0","id":"a","result":{"progress":1}}"#)
            .unwrap();
    assert_eq!(r.id, Some(Id::from("a")));
    assert_eq!(r.outcome.unwrap().progress, 1.0);
    let r = decode_response_as::<Progress>(
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":[1]}}"#,
    )
    .unwrap();
    assert_eq!(r.id, None);
    let e = r.outcome.unwrap_err();
    assert_eq!((e.code, e.data.unwrap().get()), (PARSE_ERROR, "[1]"));
    // A result may be any value.
    let r = decode_response_as::<Option<u8>>(br#"{"jsonrpc":"2.0","id":1,"result":null}"#).unwrap();
    assert_eq!(r.outcome.unwrap(), None);
    let r =
        decode_response_as::<&RawValue>(br#"{"jsonrpc":"2.0","id":1,"result": [ 1 ] }"#).unwrap();
    assert_eq!(r.outcome.unwrap().get(), "[ 1 ]");
    let Err(TypedDecodeError::Unexpected(Message::Notification(n))) =
        decode_response_as::<Progress>(br#"{"jsonrpc":"2.0","method":"m","params":[1]}"#)
    else {
        panic!()
    };
    assert_eq!(n.params.unwrap().get(), "[1]");
    assert!(matches!(
        decode_response_as::<Progress>(br#"{"jsonrpc":"2.0","id":1,"result":{"progress":"x"}}"#),
        Err(TypedDecodeError::Payload(_))
    ));
    assert!(matches!(
        decode_response_as::<Progress>(b"[]"),
        Err(TypedDecodeError::Invalid(DecodeError::EmptyBatch))
    ));
    let error = decode_response_as::<Progress>(b"{").unwrap_err();
    assert!(matches!(
        &error,
        TypedDecodeError::Invalid(DecodeError::NotJson(_))
    ));
    assert!(error.to_string().starts_with("not JSON"), "{error}");
}

/// A field that swallows its own errors: the fast reader gives up where serde_json does not
/// (an escape), and must not go on as if nothing happened.
#[derive(Debug, PartialEq, serde::Deserialize)]
struct Lenient {
    #[serde(deserialize_with = "lenient")]
    a: Option<Vec<String>>,
    b: u32,
}

fn lenient<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Ok(<Vec<String> as serde::Deserialize>::deserialize(d).ok())
}

#[test]
fn typed_decoding_survives_visitors_that_swallow_errors() {
    for (input, a) in [
        (
            r#"{"jsonrpc":"2.0","method":"m","params":{"a":["x","y\n","z"],"b":1}}"#,
            Some(vec!["x".to_owned(), "y\n".to_owned(), "z".to_owned()]),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"m","params":{"a":["x"],"b":1}}"#,
            Some(vec!["x".to_owned()]),
        ),
    ] {
        let n = decode_notification_as::<Lenient>(input.as_bytes()).unwrap();
        assert_eq!(n.params, Some(Lenient { a, b: 1 }), "{input}");
    }
}

#[test]
fn typed_decoders_agree_on_random_payloads() {
    // Random values as params and as results, compact and pretty: `fuzz_roundtrip` checks the
    // typed decoders (and so the fast reader, for these small messages) against serde_json.
    let mut rng = Rng(0x5EED_0F7A_11CE);
    for _ in 0..3000 {
        let value = random_value(&mut rng, 0);
        for text in [
            serde_json::to_string(&value).unwrap(),
            serde_json::to_string_pretty(&value).unwrap(),
        ] {
            let params = format!(r#"{{"jsonrpc":"2.0","method":"m","params":{{"v":{text}}}}}"#);
            fuzz_roundtrip(params.as_bytes());
            let params = format!(r#"{{"jsonrpc":"2.0","method":"m","params":[{text}]}}"#);
            fuzz_roundtrip(params.as_bytes());
            let result = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{text}}}"#);
            fuzz_roundtrip(result.as_bytes());
        }
    }
}
