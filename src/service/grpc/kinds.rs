//! The games this server offers, with their rule options and defaults
//! (`ListGameKinds`, and `GET /api/game-kinds` on the HTTP port).
//!
//! Nothing here names a game. The list is the games registry
//! ([`super::games::WIRE_GAMES`]) read against the contract itself: each game's
//! member of `referee.v1.GameRules` (same name as the game), its
//! `RuleOptions` message's fields, their types and comments, come from the
//! compiled descriptor set ([`FILE_DESCRIPTOR_SET`]); the defaults are what
//! the game's own conversion makes of an empty options message, read back
//! with every option explicit. A new game therefore appears here once it is
//! in the registry and in `GameRules`.

use std::collections::HashMap;
use std::sync::OnceLock;

use prost::Message as _;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorSet};

use super::convert;
use super::games::{Part, WIRE_GAMES};
use super::pb::FILE_DESCRIPTOR_SET;
use super::pb::referee::v1 as pb;
use crate::games::{hex, new_game};

/// Every game the server offers, in the registry's order; computed once.
pub fn game_kinds() -> &'static [pb::GameKind] {
    static KINDS: OnceLock<Vec<pb::GameKind>> = OnceLock::new();
    KINDS.get_or_init(|| {
        let names: Vec<&str> = WIRE_GAMES.iter().map(|g| g.name()).collect();
        kinds_of(&names)
    })
}

/// The kinds of the games `names` that have a member of `GameRules` (a game
/// without one cannot be created over the API, so it is not offered).
fn kinds_of(names: &[&str]) -> Vec<pb::GameKind> {
    let Ok(set) = FileDescriptorSet::decode(FILE_DESCRIPTOR_SET) else {
        return Vec::new();
    };
    let contract = Contract::new(&set);
    let Some((rules_message, rules_path)) = contract.message(".referee.v1.GameRules") else {
        return Vec::new();
    };
    names
        .iter()
        .filter_map(|name| {
            let (index, member) = rules_message
                .field
                .iter()
                .enumerate()
                .find(|(_, f)| f.name() == *name && f.oneof_index.is_some())?;
            let mut member_path = rules_path.clone();
            member_path.extend([2, index as i32]);
            kind(&contract, name, member, &member_path)
        })
        .collect()
}

/// One game's kind, from its member of `GameRules` (`member`, at
/// `member_path` in its file).
fn kind(
    contract: &Contract<'_>,
    name: &str,
    member: &prost_types::FieldDescriptorProto,
    member_path: &[i32],
) -> Option<pb::GameKind> {
    // An empty options message as that member: the game's defaults.
    let number = u32::try_from(member.number()).ok()?;
    let mut empty = Vec::new();
    prost::encoding::encode_key(
        number,
        prost::encoding::WireType::LengthDelimited,
        &mut empty,
    );
    prost::encoding::encode_varint(0, &mut empty);
    let empty = pb::GameRules::decode(empty.as_slice()).ok()?;
    let rules = convert::game_rules(Some(&empty), &Part::Request).ok()?;
    let default_rules = convert::game_rules_pb(&rules);
    let options_bytes = member_bytes(&default_rules.encode_to_vec(), number).unwrap_or_default();
    let defaults = top_level_fields(&options_bytes);

    let (options_message, options_path) = contract.message(member.type_name())?;
    let options = options_message
        .field
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let mut path = options_path.clone();
            path.extend([2, i as i32]);
            rule_option(contract, field, defaults.get(&field.number()), &path)
        })
        .collect();
    Some(pb::GameKind {
        name: name.to_string(),
        description: contract.comment(member_path),
        default_seats: new_game(&rules)
            .seat_names()
            .iter()
            .map(|s| s.to_string())
            .collect(),
        default_rules: Some(default_rules),
        options,
    })
}

/// One field of a game's `RuleOptions`, with its default read from the
/// encoded defaults (`value`; absent: the type's zero).
fn rule_option(
    contract: &Contract<'_>,
    field: &prost_types::FieldDescriptorProto,
    value: Option<&Value>,
    path: &[i32],
) -> pb::RuleOption {
    let enumeration = (field.r#type() == Type::Enum)
        .then(|| contract.enumeration(field.type_name()))
        .flatten();
    let value_type = match field.r#type() {
        Type::Enum | Type::Message | Type::Group => {
            field.type_name().trim_start_matches('.').to_string()
        }
        scalar => scalar
            .as_str_name()
            .trim_start_matches("TYPE_")
            .to_lowercase(),
    };
    let value_type = if field.label() == Label::Repeated {
        format!("repeated {value_type}")
    } else {
        value_type
    };
    let number = match value {
        Some(Value::Number(n)) => *n,
        _ => 0,
    };
    let default_value = match (field.r#type(), value) {
        (Type::Bool, _) => (number != 0).to_string(),
        (Type::Enum, _) => enumeration
            .and_then(|e| {
                e.value
                    .iter()
                    .find(|v| i64::from(v.number()) == number as i64)
            })
            .map(|v| v.name().to_string())
            .unwrap_or_else(|| (number as i32).to_string()),
        (Type::Int32, _) => (number as i32).to_string(),
        (Type::Int64, _) => (number as i64).to_string(),
        (Type::Sint32 | Type::Sint64, _) => {
            (((number >> 1) as i64) ^ -((number & 1) as i64)).to_string()
        }
        (Type::String, Some(Value::Bytes(b))) => String::from_utf8_lossy(b).into_owned(),
        (Type::Bytes, Some(Value::Bytes(b))) => hex(b),
        (Type::String | Type::Bytes | Type::Message | Type::Group, _) => String::new(),
        _ => number.to_string(),
    };
    pb::RuleOption {
        name: field.name().to_string(),
        value_type,
        values: enumeration
            .map(|e| {
                let mut values: Vec<_> = e.value.iter().collect();
                values.sort_by_key(|v| v.number());
                values.iter().map(|v| v.name().to_string()).collect()
            })
            .unwrap_or_default(),
        default_value,
        description: contract.comment(path),
    }
}

/// The contract's messages and enums by full name (`.pkg.Name`), each with
/// its file's comments.
struct Contract<'a> {
    messages: HashMap<String, (&'a DescriptorProto, usize, Vec<i32>)>,
    enums: HashMap<String, &'a EnumDescriptorProto>,
    /// Per file: each location path's leading comment.
    comments: Vec<HashMap<Vec<i32>, String>>,
}

impl<'a> Contract<'a> {
    fn new(set: &'a FileDescriptorSet) -> Contract<'a> {
        let mut contract = Contract {
            messages: HashMap::new(),
            enums: HashMap::new(),
            comments: Vec::new(),
        };
        for (file_index, file) in set.file.iter().enumerate() {
            let prefix = match file.package() {
                "" => String::new(),
                package => format!(".{package}"),
            };
            for (i, message) in file.message_type.iter().enumerate() {
                contract.add_message(&prefix, message, file_index, vec![4, i as i32]);
            }
            for e in &file.enum_type {
                contract.enums.insert(format!("{prefix}.{}", e.name()), e);
            }
            contract.comments.push(
                file.source_code_info
                    .iter()
                    .flat_map(|info| &info.location)
                    .filter_map(|l| Some((l.path.clone(), l.leading_comments.clone()?)))
                    .collect(),
            );
        }
        contract
    }

    fn add_message(
        &mut self,
        prefix: &str,
        message: &'a DescriptorProto,
        file: usize,
        path: Vec<i32>,
    ) {
        let name = format!("{prefix}.{}", message.name());
        for e in &message.enum_type {
            self.enums.insert(format!("{name}.{}", e.name()), e);
        }
        for (i, nested) in message.nested_type.iter().enumerate() {
            let mut nested_path = path.clone();
            nested_path.extend([3, i as i32]);
            self.add_message(&name, nested, file, nested_path);
        }
        self.messages.insert(name, (message, file, path));
    }

    /// The message of full name `name`, and its file index with its path
    /// (the path's first element is replaced by nothing: callers extend it).
    fn message(&self, name: &str) -> Option<(&'a DescriptorProto, Vec<i32>)> {
        let (message, file, path) = self.messages.get(name)?;
        let mut located = vec![*file as i32];
        located.extend(path);
        Some((message, located))
    }

    fn enumeration(&self, name: &str) -> Option<&'a EnumDescriptorProto> {
        self.enums.get(name).copied()
    }

    /// The leading comment at `path` (file index first), on one line.
    fn comment(&self, path: &[i32]) -> String {
        let Some((file, path)) = path.split_first() else {
            return String::new();
        };
        self.comments
            .get(*file as usize)
            .and_then(|c| c.get(path))
            .map(|text| text.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    }
}

/// A top-level field's value in an encoded message.
enum Value {
    Number(u64),
    Bytes(Vec<u8>),
}

/// The top-level fields of an encoded message, by number (the last of a
/// repeated field).
fn top_level_fields(mut bytes: &[u8]) -> HashMap<i32, Value> {
    use prost::encoding::{WireType, decode_key, decode_varint};
    let mut fields = HashMap::new();
    while !bytes.is_empty() {
        let Ok((number, wire)) = decode_key(&mut bytes) else {
            break;
        };
        let value = match wire {
            WireType::Varint => match decode_varint(&mut bytes) {
                Ok(n) => Value::Number(n),
                Err(_) => break,
            },
            WireType::LengthDelimited => {
                let Ok(len) = decode_varint(&mut bytes) else {
                    break;
                };
                let Some((value, rest)) = bytes.split_at_checked(len as usize) else {
                    break;
                };
                bytes = rest;
                Value::Bytes(value.to_vec())
            }
            WireType::ThirtyTwoBit if bytes.len() >= 4 => {
                let (value, rest) = bytes.split_at(4);
                bytes = rest;
                Value::Number(u64::from(u32::from_le_bytes(
                    value.try_into().unwrap_or_default(),
                )))
            }
            WireType::SixtyFourBit if bytes.len() >= 8 => {
                let (value, rest) = bytes.split_at(8);
                bytes = rest;
                Value::Number(u64::from_le_bytes(value.try_into().unwrap_or_default()))
            }
            _ => break,
        };
        fields.insert(number as i32, value);
    }
    fields
}

/// The payload of length-delimited field `number` of an encoded message.
fn member_bytes(message: &[u8], number: u32) -> Option<Vec<u8>> {
    match top_level_fields(message).remove(&(number as i32))? {
        Value::Bytes(b) => Some(b),
        Value::Number(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_game_is_offered_with_its_options_and_defaults() {
        let kinds = game_kinds();
        let names: Vec<&str> = kinds.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(
            names,
            WIRE_GAMES.iter().map(|g| g.name()).collect::<Vec<_>>(),
            "every game of the registry"
        );
        for kind in kinds {
            assert!(!kind.description.is_empty(), "{}", kind.name);
            assert!(kind.default_seats.len() >= 2, "{}", kind.name);
            assert!(!kind.options.is_empty(), "{}", kind.name);
            for option in &kind.options {
                assert!(
                    !option.description.is_empty(),
                    "{}.{}",
                    kind.name,
                    option.name
                );
            }
            // The defaults create a game.
            convert::game_rules(kind.default_rules.as_ref(), &Part::Request).unwrap();
        }
        let option = |game: &str, name: &str| {
            kinds
                .iter()
                .find(|k| k.name == game)
                .and_then(|k| k.options.iter().find(|o| o.name == name))
                .cloned()
                .unwrap()
        };
        let variant = option("punct", "variant");
        assert_eq!(variant.value_type, "punct.v1.Variant");
        assert_eq!(variant.default_value, "VARIANT_STANDARD");
        assert!(variant.values.contains(&"VARIANT_BASIC".to_string()));
        assert_eq!(option("punct", "max_plies").default_value, "1000");
        assert_eq!(option("punct", "repetition_limit").default_value, "3");
        assert_eq!(option("dots", "width").default_value, "39");
        assert_eq!(option("dots", "height").value_type, "uint32");
        assert_eq!(option("punto", "players").default_value, "2");
        assert_eq!(option("punto", "team").default_value, "false");
        assert_eq!(option("punto", "entropy").value_type, "bytes");
        assert_eq!(option("punto", "entropy").default_value, "");
    }

    #[test]
    fn a_game_without_a_member_of_game_rules_is_not_offered() {
        let kinds = kinds_of(&["dots", "chess"]);
        assert_eq!(kinds.len(), 1);
        assert_eq!(kinds[0].name, "dots");
        assert_eq!(kinds[0].default_seats, ["red", "blue"]);
    }
}
