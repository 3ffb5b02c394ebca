//! The values the store's queries bind and read, independent of the backend: [`Value`] (the five
//! storage classes both `SQLite` and the `PostgreSQL` schema use), the conversions from and to Rust
//! types, query parameters ([`Params`], [`params!`](params)) and rows ([`Row`]). No I/O.

use super::Error;

/// One stored value: the storage classes of the schema (`INTEGER`/`BIGINT`, `REAL`/`DOUBLE
/// PRECISION`, `TEXT`, `BLOB`/`BYTEA`, and NULL).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Value {
    fn kind(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Int(_) => "an integer",
            Value::Real(_) => "a real",
            Value::Text(_) => "text",
            Value::Blob(_) => "a blob",
        }
    }
}

/// A Rust value bound as a query parameter.
pub(crate) trait ToValue {
    fn to_value(&self) -> Value;
}

impl ToValue for Value {
    fn to_value(&self) -> Value {
        self.clone()
    }
}
impl ToValue for i64 {
    fn to_value(&self) -> Value {
        Value::Int(*self)
    }
}
impl ToValue for i32 {
    fn to_value(&self) -> Value {
        Value::Int(i64::from(*self))
    }
}
impl ToValue for u32 {
    fn to_value(&self) -> Value {
        Value::Int(i64::from(*self))
    }
}
impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Int(i64::from(*self))
    }
}
impl ToValue for f64 {
    fn to_value(&self) -> Value {
        Value::Real(*self)
    }
}
impl ToValue for str {
    fn to_value(&self) -> Value {
        Value::Text(self.to_owned())
    }
}
impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::Text(self.clone())
    }
}
impl ToValue for [u8] {
    fn to_value(&self) -> Value {
        Value::Blob(self.to_vec())
    }
}
impl ToValue for Vec<u8> {
    fn to_value(&self) -> Value {
        Value::Blob(self.clone())
    }
}
impl<T: ToValue + ?Sized> ToValue for &T {
    fn to_value(&self) -> Value {
        (**self).to_value()
    }
}
impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToValue::to_value)
    }
}

/// A Rust value read from a column.
pub(crate) trait FromValue: Sized {
    /// `None` when the stored value has another type (the caller names the column).
    fn from_value(v: &Value) -> Option<Self>;
}

impl FromValue for Value {
    fn from_value(v: &Value) -> Option<Self> {
        Some(v.clone())
    }
}
impl FromValue for i64 {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
}
impl FromValue for u32 {
    fn from_value(v: &Value) -> Option<Self> {
        i64::from_value(v).and_then(|i| u32::try_from(i).ok())
    }
}
impl FromValue for i32 {
    fn from_value(v: &Value) -> Option<Self> {
        i64::from_value(v).and_then(|i| i32::try_from(i).ok())
    }
}
impl FromValue for bool {
    fn from_value(v: &Value) -> Option<Self> {
        i64::from_value(v).map(|i| i != 0)
    }
}
impl FromValue for f64 {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Real(x) => Some(*x),
            #[expect(
                clippy::cast_precision_loss,
                reason = "as SQLite reads an integer as a real"
            )]
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }
}
impl FromValue for String {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Text(s) => Some(s.clone()),
            _ => None,
        }
    }
}
impl FromValue for Vec<u8> {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Blob(b) => Some(b.clone()),
            _ => None,
        }
    }
}
impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Null => Some(None),
            other => T::from_value(other).map(Some),
        }
    }
}

/// A column by position or by name.
pub(crate) trait RowIndex {
    fn index(&self, names: &[String]) -> Option<usize>;
}
impl RowIndex for usize {
    fn index(&self, names: &[String]) -> Option<usize> {
        (*self < names.len()).then_some(*self)
    }
}
impl RowIndex for &str {
    fn index(&self, names: &[String]) -> Option<usize> {
        names.iter().position(|n| n.eq_ignore_ascii_case(self))
    }
}

/// One row of a query's answer.
#[derive(Debug)]
pub(crate) struct Row<'a> {
    pub(super) names: &'a [String],
    pub(super) values: &'a [Value],
}

impl Row<'_> {
    /// The value of column `idx` as a `T`; a missing column or another type is an error.
    #[expect(
        clippy::needless_pass_by_value,
        reason = "rusqlite's signature, so that the queries read alike on both backends"
    )]
    pub(crate) fn get<I: RowIndex, T: FromValue>(&self, idx: I) -> Result<T, Error> {
        let idx = idx.index(self.names).ok_or(Error::Column)?;
        let v = self.values.get(idx).ok_or(Error::Column)?;
        T::from_value(v).ok_or_else(|| Error::Type {
            idx,
            want: std::any::type_name::<T>(),
            got: v.kind(),
        })
    }
}

/// The parameters of one statement.
pub(crate) trait Params {
    fn values(self) -> Vec<Value>;
}

impl Params for &[&dyn ToValue] {
    fn values(self) -> Vec<Value> {
        self.iter().map(ToValue::to_value).collect()
    }
}
impl Params for [&dyn ToValue; 0] {
    fn values(self) -> Vec<Value> {
        Vec::new()
    }
}
impl Params for Vec<Value> {
    fn values(self) -> Vec<Value> {
        self
    }
}

macro_rules! array_params {
    ($($n:literal)*) => {$(
        impl<T: ToValue> Params for [T; $n] {
            fn values(self) -> Vec<Value> {
                self.iter().map(ToValue::to_value).collect()
            }
        }
    )*};
}
array_params!(1 2 3 4 5 6 7 8);

/// Parameters from an iterator of values (a query built at run time).
pub(crate) fn params_from_iter<I: IntoIterator<Item = Value>>(values: I) -> Vec<Value> {
    values.into_iter().collect()
}

/// Statement parameters as a slice of [`ToValue`], like `rusqlite::params!`.
macro_rules! params {
    ($($p:expr),* $(,)?) => {
        &[$(&$p as &dyn $crate::store::sql::ToValue),*] as &[&dyn $crate::store::sql::ToValue]
    };
}
pub(crate) use params;
