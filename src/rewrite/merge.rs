//! When adjacent segments may become one, and how their rows are joined.
//!
//! Format §8: a column's name, type and field metadata are its identity,
//! so segments merge only where their columns agree on all three. A column
//! set that grows or shrinks can be merged on request ([`union_fields`]),
//! null-filling the rows that lack a column; a name whose type or metadata
//! changed never is, because it may be a different series, and fusing two
//! series into one column could not be detected afterwards.

use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema, SchemaRef};

/// Whether `a` and `b` are one series: the same columns in the same order,
/// agreeing on name, type and field metadata, and the same schema-level
/// metadata. Only nullability may differ. Returns the schema rows of both
/// fit (a column is nullable if it is in either).
pub fn same_series(a: &Schema, b: &Schema) -> Option<Schema> {
    if a.metadata() != b.metadata() || a.fields().len() != b.fields().len() {
        return None;
    }
    let fields = a
        .fields()
        .iter()
        .zip(b.fields().iter())
        .map(|(x, y)| one_column(x, y))
        .collect::<Option<Vec<Field>>>()?;
    Some(Schema::new_with_metadata(fields, a.metadata().clone()))
}

/// The union of `a`'s and `b`'s columns, `a`'s first, when every name they
/// share agrees on type and field metadata (and the schema-level metadata
/// agrees). A column only one side has becomes nullable: the other side's
/// rows will hold nulls there.
pub fn union_fields(a: &Schema, b: &Schema) -> Option<Schema> {
    if a.metadata() != b.metadata() {
        return None;
    }
    let mut fields = Vec::with_capacity(a.fields().len() + b.fields().len());
    for x in a.fields() {
        fields.push(match b.field_with_name(x.name()) {
            Ok(y) => one_column(x, y)?,
            Err(_) => x.as_ref().clone().with_nullable(true),
        });
    }
    for y in b.fields() {
        if a.field_with_name(y.name()).is_err() {
            fields.push(y.as_ref().clone().with_nullable(true));
        }
    }
    Some(Schema::new_with_metadata(fields, a.metadata().clone()))
}

/// Two columns that are one series, as one field; `None` when they are not.
fn one_column(x: &Field, y: &Field) -> Option<Field> {
    (x.name() == y.name() && x.data_type() == y.data_type() && x.metadata() == y.metadata())
        .then(|| x.clone().with_nullable(x.is_nullable() || y.is_nullable()))
}

/// `batch` laid out as `schema`: its columns by name, nulls where it has
/// none of that name.
pub(crate) fn conform(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, String> {
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|field| match batch.schema().index_of(field.name()) {
            Ok(i) => Arc::clone(batch.column(i)),
            Err(_) => new_null_array(field.data_type(), batch.num_rows()),
        })
        .collect();
    RecordBatch::try_new(Arc::clone(schema), columns).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::DataType;
    use std::collections::HashMap;

    fn field(name: &str, t: DataType, meta: &[(&str, &str)]) -> Field {
        Field::new(name, t, false).with_metadata(
            meta.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<HashMap<_, _>>(),
        )
    }

    #[test]
    fn a_column_whose_type_or_metadata_moved_is_never_one_series() {
        let a = Schema::new(vec![field("v", DataType::Int64, &[("unit", "ns")])]);
        let typed = Schema::new(vec![field("v", DataType::Float64, &[("unit", "ns")])]);
        let described = Schema::new(vec![field("v", DataType::Int64, &[("unit", "us")])]);
        let renamed = Schema::new(vec![field("w", DataType::Int64, &[("unit", "ns")])]);
        assert!(same_series(&a, &a).is_some());
        for other in [&typed, &described, &renamed] {
            assert!(same_series(&a, other).is_none());
        }
        assert!(union_fields(&a, &typed).is_none());
        assert!(union_fields(&a, &described).is_none());
        // A different name is a column that comes and goes: a union.
        let both = union_fields(&a, &renamed).unwrap();
        assert_eq!(both.fields().len(), 2);
        assert!(both.fields().iter().all(|f| f.is_nullable()));
    }

    #[test]
    fn a_column_set_that_grew_is_a_union_but_not_one_series() {
        let a = Schema::new(vec![field("ts", DataType::Int64, &[])]);
        let b = Schema::new(vec![
            field("ts", DataType::Int64, &[]),
            field("x", DataType::Utf8, &[]),
        ]);
        assert!(same_series(&a, &b).is_none());
        let u = union_fields(&a, &b).unwrap();
        assert_eq!(u.field(0).name(), "ts");
        assert!(
            !u.field(0).is_nullable(),
            "a column both have keeps its nullability"
        );
        assert!(u.field(1).is_nullable());
    }
}
